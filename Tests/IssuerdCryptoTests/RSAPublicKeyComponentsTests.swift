import Foundation
import IssuerdCrypto
import Testing

/// `RSA.Signing.PublicKey(modulus:exponent:)`, the form a PKCS#11 token reports, checked
/// against the `openssl` CLI's own public key for the same RSA key.
@Suite("RSA public key from modulus and exponent")
struct RSAPublicKeyComponentsTests {
    @Test func buildsTheSamePublicKeyAsOpenSSL() throws {
        let openssl = try #require(ExternalTool.which("openssl"), "the openssl CLI is required")
        let directory = try ExternalTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key.pem").path
        #expect(
            try ExternalTool.run(
                openssl, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key]
            ).status == 0)
        let modulusLine = String(
            decoding: try ExternalTool.run(openssl, ["rsa", "-in", key, "-noout", "-modulus"]).stdout, as: UTF8.self)
        let modulus = try BinaryEncoding.decodeHex(
            String(modulusLine.dropFirst("Modulus=".count)).trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        )
        let expected = String(
            decoding: try ExternalTool.run(openssl, ["pkey", "-in", key, "-pubout"]).stdout, as: UTF8.self)
        let built = try RSA.Signing.PublicKey(modulus: modulus, exponent: [0x01, 0x00, 0x01])
        #expect(built.pemRepresentation == expected)
        #expect(built.keySizeInBits == 2048)
        // A leading zero byte (as some tokens report the modulus) gives the same key.
        #expect(
            try RSA.Signing.PublicKey(modulus: [0] + modulus, exponent: [0x01, 0x00, 0x01]).pemRepresentation
                == expected)
        #expect(throws: CryptoError.self) {
            try RSA.Signing.PublicKey(modulus: Array(modulus.prefix(128)), exponent: [0x01, 0x00, 0x01])
        }
        #expect(throws: CryptoError.self) { try RSA.Signing.PublicKey(modulus: [], exponent: [0x03]) }
    }
}
