import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdWire
import Testing

@testable import IssuerdAPI

/// The provisioning body is read by a one-pass parser and a hand-written mapping, with
/// `JSONDecoder` behind them for everything they decline: whatever the fast path accepts must
/// be exactly what `JSONDecoder` gives, and an ordinary body must take the fast path.
@Suite("Provisioning request body, fast path")
struct ProvisioningRequestJSONTests {
    static func fast(_ text: String) -> ProvisioningRequest? {
        Array(text.utf8).withUnsafeBufferPointer { JSONValue.parse(bytes: $0) }.flatMap(ProvisioningRequest.init(json:))
    }

    static func decoded(_ text: String) -> ProvisioningRequest? {
        try? JSONDecoder().decode(ProvisioningRequest.self, from: Data(text.utf8))
    }

    @Test("An ordinary body takes the fast path and reads as JSONDecoder reads it")
    func ordinary() throws {
        let body = #"""
            {"certificates":["MIIB\/AAA","MIIC"],"nonce":"q83vEg==","nonceSignature":"AAEC","encryptionScheme":"ECC_V2",
             "channel":"in_app","device":{"id":"d-1","type":"phone","locale":"ko_KR","model":null,"extra":[1,{"x":true}]},"unknown":3.5}
            """#
        let fast = try #require(Self.fast(body))
        #expect(fast == Self.decoded(body))
        #expect(fast.certificates == ["MIIB/AAA", "MIIC"])
        #expect(fast.device?.model == nil)
        #expect(Self.fast(#"{"certificates":[],"nonce":"","nonceSignature":"","device":null,"channel":null}"#) != nil)
    }

    @Test(
        "Bodies JSONDecoder refuses are never accepted by the fast path",
        arguments: [
            "", "[]", "null", #""x""#, "{}", #"{"certificates":["a"],"nonce":"n"}"#,
            #"{"certificates":"a","nonce":"n","nonceSignature":"s"}"#,
            #"{"certificates":[1],"nonce":"n","nonceSignature":"s"}"#,
            #"{"certificates":null,"nonce":"n","nonceSignature":"s"}"#,
            #"{"certificates":["a"],"nonce":null,"nonceSignature":"s"}"#,
            #"{"certificates":["a"],"nonce":"n","nonceSignature":"s","channel":7}"#,
            #"{"certificates":["a"],"nonce":"n","nonceSignature":"s","device":[]}"#,
            #"{"certificates":["a"],"nonce":"n","nonceSignature":"s","device":{"id":5}}"#,
            #"{"certificates":["a"],"nonce":"n","nonceSignature":"s","encryptionScheme":false}"#,
            #"{"certificates":["a"],"nonce":"n","nonceSignature":"s"} x"#,
            #"{"certificates":["a\ud800"],"nonce":"n","nonceSignature":"s"}"#,
        ])
    func refused(body: String) {
        #expect(Self.decoded(body) == nil)
        #expect(Self.fast(body) == nil)
    }

    @Test("A body with bytes that are not UTF-8 is left to JSONDecoder, which refuses it")
    func invalidUTF8() {
        var body = Array(#"{"certificates":["a"],"nonce":"n","nonceSignature":"s","device":{"name":"ab"}}"#.utf8)
        body.insert(0xFF, at: body.count - 4)
        #expect(body.withUnsafeBufferPointer { JSONValue.parse(bytes: $0) } == nil)
        #expect((try? JSONDecoder().decode(ProvisioningRequest.self, from: Data(body))) == nil)
    }

    @Test("Leniencies and repeated names are left to JSONDecoder")
    func declined() {
        for body in [
            #"{"certificates":["a"],"nonce":"n","nonceSignature":"s",}"#,
            #"{"certificates":["a"],"nonce":"n","nonce":"m","nonceSignature":"s"}"#,
        ] {
            #expect(Self.fast(body) == nil)
        }
        #expect(Self.decoded(#"{"certificates":["a"],"nonce":"n","nonce":"m","nonceSignature":"s"}"#)?.nonce == "n")
    }

    @Test("Generated bodies: the fast path agrees with JSONDecoder whenever it answers")
    func generated() {
        var generator = SystemRandomNumberGenerator()
        let strings = [#""plain""#, #""esc\"aped\\\n\u00e9\ud83d\ude00""#, #""한국어""#, #""""#]
        let wrong = ["1", "-0.5e3", "true", "null", "[]", "{}", #"["a"]"#]
        func field(_ name: String, required: Bool) -> String? {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0: return nil  // absent
            case 1: return "\"\(name)\":" + wrong.randomElement(using: &generator)!
            default: return "\"\(name)\":" + strings.randomElement(using: &generator)!
            }
        }
        var agreed = 0
        var fastAnswers = 0
        for _ in 0..<3_000 {
            var members: [String] = []
            switch Int.random(in: 0..<8, using: &generator) {
            case 0: break
            case 1: members.append(#""certificates":"# + wrong.randomElement(using: &generator)!)
            default:
                let count = Int.random(in: 0...3, using: &generator)
                let items = (0..<count).map { _ in
                    Int.random(in: 0..<12, using: &generator) == 0 ? "7" : strings.randomElement(using: &generator)!
                }
                members.append(#""certificates":["# + items.joined(separator: ",") + "]")
            }
            for name in ["nonce", "nonceSignature", "encryptionScheme", "channel"] {
                if let member = field(name, required: true) { members.append(member) }
            }
            // Now and then a repeated name (JSONDecoder keeps the first, or refuses).
            if Int.random(in: 0..<5, using: &generator) == 0,
                let member = field(["nonce", "channel"].randomElement(using: &generator)!, required: true)
            {
                members.append(member)
            }
            if Bool.random(using: &generator) {
                let fields = ["id", "type", "name", "model", "osVersion", "locale", "ipAddress", "other"].compactMap {
                    field($0, required: false)
                }
                members.append(
                    Int.random(in: 0..<6, using: &generator) == 0
                        ? #""device":"x""# : #""device":{"# + fields.joined(separator: ",") + "}")
            }
            members.shuffle(using: &generator)
            let body = "{" + members.joined(separator: Bool.random(using: &generator) ? "," : " ,\n ") + "}"
            let fast = Self.fast(body)
            if let fast {
                fastAnswers += 1
                #expect(fast == Self.decoded(body), "\(body)")
            }
            agreed += 1
        }
        #expect(agreed == 3_000)
        #expect(fastAnswers > 300)
    }
}
