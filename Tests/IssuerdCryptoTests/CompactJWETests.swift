import Foundation
import Testing

@testable import IssuerdCrypto

/// Our compact JWE (A256GCMKW + A256GCM) opened by an independent JOSE implementation (jwcrypto,
/// Tests/IssuerdCryptoTests/Oracle/open_jwe.py) with the key SHA-256(secret) computed there.
@Suite struct CompactJWETests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Oracle/open_jwe.py"
    ).path

    static func open(_ jwe: String, secret: String) throws -> [String: Any] {
        let python = try ExternalTool.python()
        let request = try JSONSerialization.data(withJSONObject: ["jwe": jwe, "secret": secret])
        let output = try ExternalTool.run(python, [script], input: request)
        guard output.status == 0 else { throw SetupError("oracle failed (\(output.status)): \(output.stderr)") }
        guard let answer = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any] else {
            throw SetupError("the oracle answered no object")
        }
        return answer
    }

    static let secret = "throwaway-shared-secret-Ünïcödé"

    static func seal(_ plaintext: String) throws -> String {
        try CompactJWE.seal(
            Array(plaintext.utf8), keyEncryptionKey: CompactJWE.keyEncryptionKey(sharedSecret: Array(secret.utf8)),
            header: [
                "kid": .string("API-KEY-1"), "typ": .string("JOSE"), "channelSecurityContext": .string("SHARED_SECRET"),
                "iat": .string("1764921600"),
            ])
    }

    @Test("jwcrypto opens it with SHA-256(secret): every header parameter and the plaintext")
    func opensInJWCrypto() throws {
        let plaintext = #"{"accountNumber":"4111111111111111","name":"홍길동 \"Jr\" / O'Brien"}"#
        let jwe = try Self.seal(plaintext)
        let answer = try Self.open(jwe, secret: Self.secret)
        #expect(answer["opened"] as? Bool == true, "\(answer)")
        #expect(answer["parts"] as? Int == 5)
        #expect(answer["plaintext"] as? String == plaintext)
        let header = try #require(answer["header"] as? [String: Any])
        #expect(header["alg"] as? String == "A256GCMKW")
        #expect(header["enc"] as? String == "A256GCM")
        #expect(header["kid"] as? String == "API-KEY-1")
        #expect(header["typ"] as? String == "JOSE")
        #expect(header["channelSecurityContext"] as? String == "SHARED_SECRET")
        #expect(header["iat"] as? String == "1764921600")
        #expect(try BinaryEncoding.decodeBase64URL(try #require(header["iv"] as? String)).count == 12)
        #expect(try BinaryEncoding.decodeBase64URL(try #require(header["tag"] as? String)).count == 16)
        #expect(header.count == 8)
        #expect((answer["cek"] as? String)?.count == 64)
        #expect((answer["contentIV"] as? String)?.count == 24)
    }

    @Test("A wrong secret does not open it; an altered ciphertext does not either")
    func wrongSecretFails() throws {
        let jwe = try Self.seal(#"{"a":"b"}"#)
        let wrong = try Self.open(jwe, secret: Self.secret + "x")
        #expect(wrong["opened"] as? Bool == false)
        var parts = jwe.split(separator: ".").map(String.init)
        var ciphertext = try BinaryEncoding.decodeBase64URL(parts[3])
        ciphertext[0] ^= 1
        parts[3] = BinaryEncoding.base64URLString(ciphertext)
        #expect(try Self.open(parts.joined(separator: "."), secret: Self.secret)["opened"] as? Bool == false)
    }

    @Test("Two payloads never share a content key, a wrap IV or a content IV")
    func freshKeysAndIVs() throws {
        let answers = try (0..<4).map { _ in try Self.open(try Self.seal(#"{"same":"plaintext"}"#), secret: Self.secret)
        }
        for field in ["cek", "wrapIV", "contentIV"] {
            let values = answers.compactMap { $0[field] as? String }
            #expect(values.count == 4 && Set(values).count == 4, "\(field) repeated")
        }
    }

    @Test("A header may not name what the sealer writes; an empty secret is no key")
    func refusals() throws {
        let key = try CompactJWE.keyEncryptionKey(sharedSecret: Array("s".utf8))
        #expect(throws: CryptoError.self) {
            try CompactJWE.seal([1], keyEncryptionKey: key, header: ["iv": .string("x")])
        }
        #expect(throws: CryptoError.self) { try CompactJWE.keyEncryptionKey(sharedSecret: [UInt8]()) }
        #expect(
            try CompactJWE.keyEncryptionKey(sharedSecret: Array("s".utf8)) == SymmetricKey(bytes: SHA256.hash([0x73])))
    }
}
