import Foundation
import IssuerdAuth
import IssuerdCrypto
import Testing

@Suite("Credential checks: the TSP signature's HMAC and time, an API key's form and digest")
struct CredentialCheckTests {
    @Test("The HMAC matches only its body and secret, among rotated signatures; the time within the window either way")
    func tspSignature() throws {
        let body = Array(#"{"requestId":"r1"}"#.utf8)
        let header = try TSPSignature.header(
            body: body, secret: "tsp-secret-0123456789abcdef", timestamp: 1_900_000_000)
        let signature = try #require(TSPSignature(header: header))
        let key = try SymmetricKey(bytes: Array("tsp-secret-0123456789abcdef".utf8))
        let matched = try #require(signature.matching(body: body, key: key))
        #expect(matched == signature.signatures[0])
        #expect(signature.matching(body: body + [0x20], key: key) == nil)
        #expect(
            signature.matching(body: body, key: try SymmetricKey(bytes: Array("another-secret-0123456789".utf8))) == nil
        )
        // A sender rotating secrets sends two; the one that matches is found.
        let rotated = try #require(
            TSPSignature(
                header: header.replacingOccurrences(of: "v1=", with: "v1=\(String(repeating: "00", count: 32)),v1=")))
        #expect(rotated.matching(body: body, key: key) == matched)

        let signed = Date(timeIntervalSince1970: 1_900_000_000)
        #expect(signature.isWithin(300, of: signed.addingTimeInterval(300)))
        #expect(signature.isWithin(300, of: signed.addingTimeInterval(-300)))
        #expect(!signature.isWithin(300, of: signed.addingTimeInterval(301)))
        #expect(!signature.isWithin(300, of: signed.addingTimeInterval(-301)))
    }

    @Test("A generated API key has the key form, its digest is the SHA-256 of the whole key, and no two are alike")
    func apiKey() throws {
        let (keyID, key) = try APIKeyCredential.generate()
        #expect(key.hasPrefix("isk_\(keyID)_"))
        #expect(keyID.utf8.count == 12)
        #expect(APIKeyCredential.hasKeyForm(key))
        #expect(APIKeyCredential.digest(key) == SHA256.hash(Array(key.utf8)))
        #expect(try APIKeyCredential.generate().key != key)
        #expect(!APIKeyCredential.hasKeyForm("Bearer " + key))
        #expect(!APIKeyCredential.hasKeyForm("isk_" + String(repeating: "a", count: 125)))
        #expect(APIKeyCredential.hasKeyForm("isk_" + String(repeating: "a", count: 124)))
    }
}
