import Foundation
import IssuerdCore
import Testing

@_spi(Testing) @testable import IssuerdCrypto

/// Our ECC_V2 and RSA_V2 output decrypted by an independent implementation (Python
/// `cryptography`, Tests/IssuerdCryptoTests/Oracle/decrypt_pass.py), JSON checked field by field.
@Suite struct OracleTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Oracle/decrypt_pass.py"
    ).path

    struct OracleAnswer: Decodable {
        let plaintext: [String: String]
        let plaintextHex: String
    }

    private func decrypt(_ request: [String: String]) throws -> OracleAnswer {
        let python = try ExternalTool.python()
        let output = try ExternalTool.run(python, [Self.script], input: try JSONEncoder().encode(request))
        guard output.status == 0 else { throw SetupError("oracle failed (\(output.status)): \(output.stderr)") }
        return try JSONDecoder().decode(OracleAnswer.self, from: output.stdout)
    }

    private func payload(name: String) throws -> PassPayload {
        try PassPayload(
            primaryAccountNumber: try #require(PrimaryAccountNumber("5399999999999999")),
            expiration: try #require(CardExpiration("03/29")),
            name: name, nonce: [0x9c, 0x02, 0x30, 0x92], nonceSignature: try SecureRandom.bytes(count: 71))
    }

    @Test(arguments: ["John Appleseed", "홍길동", "O'Brien \"Jr\" / Ünïcödé"])
    func eccV2DecryptsInPython(name: String) throws {
        let pki = TestPKI.shared
        let verifier = try AppleCertificateChainVerifier(trust: try pki.trustProfile)
        let chain = try #require(
            verifier.verify([pki.eccLeaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now).chain)
        let payload = try payload(name: name)
        let output = try ECCV2Encryptor().seal(payload, to: chain)
        let answer = try decrypt([
            "scheme": "ECC_V2", "recipientPrivateKeyPEM": pki.eccLeaf.privateKeyPEM,
            "encryptedPassData": BinaryEncoding.base64String(output.encryptedPassData),
            "ephemeralPublicKey": BinaryEncoding.base64String(output.ephemeralPublicKey),
        ])
        #expect(answer.plaintext["primaryAccountNumber"] == "5399999999999999")
        #expect(answer.plaintext["expiration"] == "03/29")
        #expect(answer.plaintext["name"] == name)
        #expect(answer.plaintext["nonce"] == "9c023092")
        #expect(answer.plaintext["nonceSignature"] == BinaryEncoding.hexString(payload.nonceSignature))
        #expect(answer.plaintext.count == 5)
        #expect(answer.plaintextHex == BinaryEncoding.hexString(payload.jsonBytes()))
    }

    /// The oracle also agrees with the fixture vectors' recipient-side computation: a
    /// tampered ciphertext must fail there too (the oracle can fail).
    @Test func oracleRejectsTamperedData() throws {
        let pki = TestPKI.shared
        let recipient = try P256.KeyAgreement.PrivateKey(pemRepresentation: pki.eccLeaf.privateKeyPEM)
        var output = try ECCV2Encryptor().seal(plaintext: Array("{\"a\":\"b\"}".utf8), to: recipient.publicKey)
        output = ECCV2Output(
            encryptedPassData: output.encryptedPassData.map { $0 ^ 0x01 }, ephemeralPublicKey: output.ephemeralPublicKey
        )
        let python = try ExternalTool.python()
        let request: [String: String] = [
            "scheme": "ECC_V2", "recipientPrivateKeyPEM": pki.eccLeaf.privateKeyPEM,
            "encryptedPassData": BinaryEncoding.base64String(output.encryptedPassData),
            "ephemeralPublicKey": BinaryEncoding.base64String(output.ephemeralPublicKey),
        ]
        let result = try ExternalTool.run(python, [Self.script], input: try JSONEncoder().encode(request))
        #expect(result.status == 1)
        #expect(result.stderr.contains("InvalidTag"))
    }

    @Test func rsaV2DecryptsInPython() throws {
        let pki = TestPKI.shared
        let verifier = try AppleCertificateChainVerifier(trust: try pki.trustProfile)
        let chain = try #require(
            verifier.verify(
                [pki.rsaLeaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now, for: .rsaV2
            ).chain)
        let payload = try payload(name: "홍길동")
        let output = try RSAV2Encryptor(enabled: true).seal(payload, to: chain)
        #expect(output.wrappedKey.count == 256)
        let answer = try decrypt([
            "scheme": "RSA_V2", "recipientPrivateKeyPEM": pki.rsaLeaf.privateKeyPEM,
            "encryptedPassData": BinaryEncoding.base64String(output.encryptedPassData),
            "wrappedKey": BinaryEncoding.base64String(output.wrappedKey),
        ])
        #expect(answer.plaintext["primaryAccountNumber"] == "5399999999999999")
        #expect(answer.plaintext["expiration"] == "03/29")
        #expect(answer.plaintext["name"] == "홍길동")
        #expect(answer.plaintext["nonce"] == "9c023092")
        #expect(answer.plaintext["nonceSignature"] == BinaryEncoding.hexString(payload.nonceSignature))
    }
}
