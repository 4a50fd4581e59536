import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdCrypto
import Testing

@Suite("Bearer token and TSP signature parsing")
struct AuthParsingTests {
    static func token(header: String, payload: String, signature: [UInt8] = [1, 2, 3]) -> String {
        BinaryEncoding.base64URLString(Array(header.utf8)) + "." + BinaryEncoding.base64URLString(Array(payload.utf8))
            + "."
            + BinaryEncoding.base64URLString(signature)
    }

    @Test("A well-formed JWT yields its algorithm, claims and signing input")
    func parsesJWT() throws {
        let compact = Self.token(
            header: #"{"alg":"HS256","typ":"JWT"}"#, payload: #"{"sub":"cust-1","exp":1900000000,"nbf":1}"#)
        let jwt = try #require(JWT(compact: compact))
        #expect(jwt.algorithm == "HS256")
        #expect(jwt.subject == "cust-1")
        #expect(jwt.expiresAt == 1_900_000_000)
        #expect(jwt.notBefore == 1)
        #expect(jwt.signature == [1, 2, 3])
        #expect(
            String(decoding: jwt.signingInput, as: UTF8.self)
                == compact.split(separator: ".").prefix(2).joined(separator: "."))
        let fractional = try #require(
            JWT(compact: Self.token(header: #"{"alg":"ES256"}"#, payload: #"{"sub":"c\u00e9","exp":1.9e9,"nbf":1.5}"#)))
        #expect(fractional.subject == "c\u{e9}")
        #expect(fractional.expiresAt == 1_900_000_000)
        #expect(fractional.notBefore == 1.5)
    }

    @Test("Claims of another JSON type are absent; a repeated name is read as JSONSerialization reads it")
    func claimTypes() throws {
        let typed = try #require(
            JWT(compact: Self.token(header: #"{"alg":"HS256"}"#, payload: #"{"sub":7,"exp":"1900000000","nbf":null}"#)))
        #expect(typed.subject == nil)
        #expect(typed.expiresAt == nil)
        #expect(typed.notBefore == nil)
        let payload = #"{"sub":"first","sub":"second","exp":5}"#
        let repeated = try #require(JWT(compact: Self.token(header: #"{"alg":"HS256"}"#, payload: payload)))
        let foundation = try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any]
        #expect(repeated.subject == foundation?["sub"] as? String)
        #expect(repeated.expiresAt == 5)
    }

    @Test(
        "Malformed JWTs are refused before any crypto",
        arguments: [
            "", "abc", "a.b", "a.b.c.d", "!!.e30.AA", "e30.e30.AA",
            token(header: "not json", payload: "{}"),
            token(header: #"{"alg":"HS256","crit":["x"]}"#, payload: #"{"sub":"a"}"#),
            token(header: #"{"typ":"JWT"}"#, payload: #"{"sub":"a"}"#),
            token(header: #"{"alg":7}"#, payload: #"{"sub":"a"}"#),
            token(header: #"["HS256"]"#, payload: #"{"sub":"a"}"#),
            token(header: #"{"alg":"HS256"}"#, payload: #"["sub"]"#),
            token(header: #"{"alg":"HS256"}"#, payload: #"{"sub":"a"} trailing"#),
            String(repeating: "a", count: 9000),
        ])
    func refusesMalformedJWT(token: String) {
        #expect(JWT(compact: token) == nil)
    }

    @Test("The TSP signature header parses strictly")
    func tspHeader() throws {
        let hex = String(repeating: "ab", count: 32)
        let parsed = try #require(TSPSignature(header: "t=1700000000,v1=\(hex)"))
        #expect(parsed.timestamp == 1_700_000_000)
        #expect(parsed.signatures == [Array(repeating: 0xAB, count: 32)])
        #expect(TSPSignature(header: "t=1700000000, v1=\(hex), v0=zz")?.signatures.count == 1)
        // Spaces and tabs around the list's items are optional whitespace; inside an item they are not.
        #expect(TSPSignature(header: "\tt=1700000000 ,\t v1=\(hex)\t") == parsed)
        #expect(TSPSignature(header: "t =1700000000,v1=\(hex)") == nil)
        #expect(TSPSignature(header: "t=1700000000,v1= \(hex)") == nil)
        #expect(TSPSignature(header: "t=1700000000, ,v1=\(hex)") == nil)
        // Taken apart by bytes: a name or value beyond ASCII is never a digit or a known scheme.
        #expect(TSPSignature(header: "t=1700000000,v1=\(hex.uppercased()),v2=ünknown") == parsed)
        #expect(TSPSignature(header: "t=1700000000,v1=\(hex.dropLast(2))é") == nil)
        #expect(TSPSignature(header: "t=１７00000000,v1=\(hex)") == nil)
        for bad in [
            "", "t=1", "v1=\(hex)", "t=x,v1=\(hex)", "t=1,v1=abc", "t=1,v1=\(hex.dropLast(2))", "t=-5,v1=\(hex)",
            "t=1,t=2,v1=\(hex)", "t=1,v1",
        ] {
            #expect(TSPSignature(header: bad) == nil, "\(bad)")
        }
        #expect(TSPSignature.signedPayload(timestamp: 12, body: Array("{}".utf8)) == Array("12.{}".utf8))
    }

    @Test(
        "Destinations are masked",
        arguments: [
            ("01012345678", "010-****-5678"), ("010-1234-5678", "010-****-5678"), ("+82 10 1234 5678", "+82-****-5678"),
            ("+1 415 555 0100", "+1-****-0100"), ("123", "****"),
        ])
    func phoneMask(input: String, expected: String) {
        #expect(DestinationMask.phone(input) == expected)
    }

    @Test("E-mail addresses are masked")
    func emailMask() {
        #expect(DestinationMask.email("hong.gildong@example.com") == "h********g@example.com")
        #expect(DestinationMask.email("ab@x.kr") == "a*@x.kr")
        #expect(DestinationMask.email("a@x.kr") == "*@x.kr")
        #expect(DestinationMask.email("@x.kr") == "****")
        #expect(DestinationMask.email("nobody") == "****")
    }
}
