import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdWire
import Testing

@testable import IssuerdAPI

/// The TSP authorization body, like the in-app one (``ProvisioningRequestJSONTests``), is read by
/// the one-pass parser and a hand-written mapping with `JSONDecoder` behind them: whatever the
/// fast path accepts must be exactly what `JSONDecoder` gives, and an ordinary body must take it.
@Suite("TSP authorization body, fast path")
struct TokenizationAuthorizeRequestJSONTests {
    static func fast(_ text: String) -> TokenizationAuthorizeRequest? {
        Array(text.utf8).withUnsafeBufferPointer { JSONValue.parse(bytes: $0) }.flatMap(
            TokenizationAuthorizeRequest.init(json:))
    }

    static func decoded(_ text: String) -> TokenizationAuthorizeRequest? {
        try? JSONDecoder().decode(TokenizationAuthorizeRequest.self, from: Data(text.utf8))
    }

    @Test("An ordinary body takes the fast path and reads as JSONDecoder reads it")
    func ordinary() throws {
        let body = #"""
            {"requestId":"r-1","tokenReference":"DNITHE3","tokenRequestorId":"40010030273","tokenizationSource":"manual",
             "card":{"accountNumber":"4111111111111111","expiration":"12\/30","cvv":"x"},
             "device":{"id":"d-1","type":"phone","locale":"ko_KR","model":null},
             "wallet":{"deviceScore":5,"accountScore":4,"phoneNumberScore":null,"recommendedDecision":"APPROVED","reasonCodes":["A1","B2"],"tokenRiskScore":12},
             "activeTokenCount":2,"unknown":[1.5,{"x":true}]}
            """#
        let fast = try #require(Self.fast(body))
        #expect(fast == Self.decoded(body))
        #expect(fast.card.expiration == "12/30")
        #expect(fast.wallet?.reasonCodes == ["A1", "B2"])
        #expect(fast.activeTokenCount == 2)
        #expect(
            Self.fast(
                #"{"requestId":"","tokenReference":"","card":{"accountNumber":"","expiration":""},"wallet":null,"device":null}"#
            ) != nil)
    }

    @Test(
        "Bodies JSONDecoder refuses are never accepted by the fast path",
        arguments: [
            "", "[]", "null", "{}", #"{"requestId":"r","tokenReference":"t"}"#,
            #"{"requestId":"r","tokenReference":"t","card":null}"#,
            #"{"requestId":"r","tokenReference":"t","card":{"accountNumber":"4"}}"#,
            #"{"requestId":7,"tokenReference":"t","card":{"accountNumber":"4","expiration":"1"}}"#,
            #"{"requestId":"r","tokenReference":"t","card":{"accountNumber":"4","expiration":"1"},"activeTokenCount":"2"}"#,
            #"{"requestId":"r","tokenReference":"t","card":{"accountNumber":"4","expiration":"1"},"activeTokenCount":2.5}"#,
            #"{"requestId":"r","tokenReference":"t","card":{"accountNumber":"4","expiration":"1"},"wallet":{"deviceScore":"5"}}"#,
            #"{"requestId":"r","tokenReference":"t","card":{"accountNumber":"4","expiration":"1"},"wallet":{"reasonCodes":"A1"}}"#,
            #"{"requestId":"r","tokenReference":"t","card":{"accountNumber":"4","expiration":"1"},"wallet":{"reasonCodes":[1]}}"#,
            #"{"requestId":"r","tokenReference":"t","card":{"accountNumber":"4","expiration":"1"},"wallet":[]}"#,
            #"{"requestId":"r","tokenReference":"t","card":{"accountNumber":"4","expiration":"1"},"device":{"id":1}}"#,
            #"{"requestId":"r","tokenReference":"t","card":{"accountNumber":"4","expiration":"1"},"activeTokenCount":99999999999999999999}"#,
        ])
    func refused(body: String) {
        #expect(Self.decoded(body) == nil)
        #expect(Self.fast(body) == nil)
    }

    @Test("Generated bodies: the fast path agrees with JSONDecoder whenever it answers")
    func generated() {
        var generator = SystemRandomNumberGenerator()
        let strings = [#""plain""#, #""esc\"aped\\\n\u00e9\ud83d\ude00""#, #""한국어""#, #""""#]
        let integers = ["0", "5", "-0", "-12", "9223372036854775807", "1.0", "2e1", "-3.5", "1E400"]
        let wrong = ["true", "null", "[]", "{}", #"["a"]"#, "1"]
        func member(_ name: String, _ values: [String]) -> String? {
            switch Int.random(in: 0..<24, using: &generator) {
            case 0: return nil  // absent
            case 1: return "\"\(name)\":" + wrong.randomElement(using: &generator)!
            default: return "\"\(name)\":" + values.randomElement(using: &generator)!
            }
        }
        func object(_ parts: [String?]) -> String {
            "{" + parts.compactMap { $0 }.shuffled(using: &generator).joined(separator: ",") + "}"
        }
        var fastAnswers = 0
        for _ in 0..<3_000 {
            var members: [String?] = ["requestId", "tokenReference", "tokenRequestorId", "tokenizationSource"].map {
                member($0, strings)
            }
            members.append(member("activeTokenCount", integers))
            if Int.random(in: 0..<12, using: &generator) > 0 {
                let card = object([member("accountNumber", strings), member("expiration", strings)])
                members.append(#""card":"# + (Int.random(in: 0..<10, using: &generator) == 0 ? #""x""# : card))
            }
            if Bool.random(using: &generator) {
                let codes = (0..<Int.random(in: 0...2, using: &generator)).map { _ in
                    Int.random(in: 0..<8, using: &generator) == 0 ? "3" : strings.randomElement(using: &generator)!
                }
                let wallet = object(
                    ["deviceScore", "accountScore", "phoneNumberScore", "tokenRiskScore"].map { member($0, integers) }
                        + [
                            member("recommendedDecision", strings),
                            member("reasonCodes", ["[" + codes.joined(separator: ",") + "]", "null"]),
                        ])
                members.append(#""wallet":"# + wallet)
            }
            if Bool.random(using: &generator) {
                members.append(
                    #""device":"#
                        + object(
                            ["id", "type", "name", "model", "osVersion", "locale", "ipAddress"].map {
                                member($0, strings)
                            }))
            }
            // Now and then a repeated name (JSONDecoder keeps the first, or refuses).
            if Int.random(in: 0..<6, using: &generator) == 0 { members.append(member("requestId", strings)) }
            let body = object(members)
            if let fast = Self.fast(body) {
                fastAnswers += 1
                #expect(fast == Self.decoded(body), "\(body)")
            }
        }
        #expect(fastAnswers > 300)
    }
}
