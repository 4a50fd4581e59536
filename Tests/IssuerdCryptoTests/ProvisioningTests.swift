import Foundation
import IssuerdCore
import Testing

@_spi(Testing) @testable import IssuerdCrypto

/// ECC_V2/RSA_V2 sealing through a verified chain, decrypted here with the recipient key, and
/// the payload's input bounds.
@Suite struct ProvisioningTests {
    private func payload(name: String = "John Appleseed") throws -> PassPayload {
        try PassPayload(
            primaryAccountNumber: try #require(PrimaryAccountNumber("4111111111111111")),
            expiration: try #require(CardExpiration("11/28")),
            name: name, nonce: [0xea, 0x85, 0xa7, 0x3a], nonceSignature: [0x0a, 0x0b, 0x0c, 0x0d])
    }

    @Test func eccV2RoundTripWithTheLeafKey() throws {
        let pki = TestPKI.shared
        let verifier = try AppleCertificateChainVerifier(trust: try pki.trustProfile)
        let chain = try #require(
            verifier.verify([pki.eccLeaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now).chain)
        let payload = try payload()
        let output = try ECCV2Encryptor().seal(payload, to: chain)
        // Recipient side, as Apple does it, from the public primitives.
        let recipient = try P256.KeyAgreement.PrivateKey(pemRepresentation: pki.eccLeaf.privateKeyPEM)
        let z = try recipient.sharedSecretFromKeyAgreement(
            with: try P256.KeyAgreement.PublicKey(x963Representation: output.ephemeralPublicKey))
        let key = try ConcatenationKDF.deriveKey(
            from: z, otherInfo: ECCV2Encryptor.otherInfo(ephemeralPublicKey: output.ephemeralPublicKey))
        let plaintext = try AES256GCM.open(
            output.encryptedPassData, using: key, nonce: [UInt8](repeating: 0, count: 12))
        #expect(plaintext == payload.jsonBytes())
        #expect(output.encryptedPassData.count == plaintext.count + 16)
    }

    @Test func rsaV2IsOffByDefaultAndRoundTripsWhenOn() throws {
        expectCryptoError(.disabled) { try RSAV2Encryptor(enabled: false) }
        let pki = TestPKI.shared
        let verifier = try AppleCertificateChainVerifier(trust: try pki.trustProfile)
        let chain = try #require(
            verifier.verify(
                [pki.rsaLeaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now, for: .rsaV2
            ).chain)
        let output = try RSAV2Encryptor(enabled: true).seal(try payload(), to: chain)
        let recipient = try RSA.Encryption.PrivateKey(pemRepresentation: pki.rsaLeaf.privateKeyPEM)
        let key = try RSAOAEP.unwrap(output.wrappedKey, with: recipient)
        #expect(
            try AES256GCM.open(output.encryptedPassData, using: key, nonce: [UInt8](repeating: 0, count: 12))
                == (try payload().jsonBytes()))
    }

    @Test func encryptorsRefuseTheOtherSchemesKey() throws {
        let pki = TestPKI.shared
        let verifier = try AppleCertificateChainVerifier(trust: try pki.trustProfile)
        let rsaChain = try #require(
            verifier.verify(
                [pki.rsaLeaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now, for: .rsaV2
            ).chain)
        let eccChain = try #require(
            verifier.verify([pki.eccLeaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now).chain)
        expectCryptoError(.invalidKey) { try ECCV2Encryptor().seal(try payload(), to: rsaChain) }
        expectCryptoError(.invalidKey) { try RSAV2Encryptor(enabled: true).seal(try payload(), to: eccChain) }
    }

    @Test func payloadBounds() throws {
        let pan = try #require(PrimaryAccountNumber("4111111111111111"))
        let expiry = try #require(CardExpiration("11/28"))
        expectCryptoError(.invalidInput) {
            try PassPayload(primaryAccountNumber: pan, expiration: expiry, name: " ", nonce: [1], nonceSignature: [1])
        }
        expectCryptoError(.invalidInput) {
            try PassPayload(
                primaryAccountNumber: pan, expiration: expiry, name: String(repeating: "가", count: 100), nonce: [1],
                nonceSignature: [1])
        }
        expectCryptoError(.invalidInput) {
            try PassPayload(
                primaryAccountNumber: pan, expiration: expiry, name: "A\u{0}B", nonce: [1], nonceSignature: [1])
        }
        expectCryptoError(.invalidInput) {
            try PassPayload(primaryAccountNumber: pan, expiration: expiry, name: "A", nonce: [], nonceSignature: [1])
        }
        expectCryptoError(.invalidInput) {
            try PassPayload(
                primaryAccountNumber: pan, expiration: expiry, name: "A", nonce: [1],
                nonceSignature: [UInt8](repeating: 1, count: 1025))
        }
    }

    /// A name is blank exactly when trimming `CharacterSet.whitespaces` leaves nothing, for every
    /// space separator, the tab, and names around them.
    @Test func blankNamesAreThoseTrimmingEmpties() {
        var samples = ["", "A", " A ", "\t", "\n", " \u{3000} ", "홍길동", "\u{200B}", "\u{85}", "\u{A0}x"]
        for value in UInt32(0)..<0x80 {
            let scalar = Unicode.Scalar(UInt8(value))
            #expect(CharacterSet.whitespaces.contains(scalar) == (value == 0x20 || value == 0x09), "\(value)")
        }
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value),
                scalar.properties.generalCategory == .spaceSeparator || CharacterSet.whitespaces.contains(scalar)
            else { continue }
            samples += [
                String(Character(scalar)), " " + String(Character(scalar)) + "\t", String(Character(scalar)) + "b",
            ]
        }
        #expect(samples.count > 50)
        for name in samples {
            let trimmedEmpty = name.trimmingCharacters(in: .whitespaces).isEmpty
            #expect(PassPayload.hasNonBlank(name) == !trimmedEmpty, "\(name.unicodeScalars.map { $0.value })")
        }
    }

    /// The hand-written JSON string escaper agrees with Foundation's parser on hard inputs.
    @Test(arguments: [
        "plain", "quote \" and \\ backslash", "홍길동", "emoji 🧾 and é", "slash / stays", "ctl \u{1}\u{1f}\n\t\r", "",
    ])
    func jsonStringRoundTrips(value: String) throws {
        let encoded = PassPayload.jsonString(value)
        #expect(try JSONDecoder().decode(String.self, from: Data(encoded)) == value)
        #expect(!String(decoding: encoded, as: UTF8.self).contains("\\/"))
    }

    @Test(arguments: ["11/28", "01/00", "12/99"])
    func expirationParses(text: String) throws {
        let value = try #require(CardExpiration(text))
        #expect(value.slashed == text)
        #expect(value.compact == text.replacingOccurrences(of: "/", with: ""))
    }

    @Test(arguments: ["13/28", "00/28", "1/28", "11-28", "11/2028", "ab/cd", "", "١١/٢٨"])
    func expirationRejects(text: String) {
        #expect(CardExpiration(text) == nil)
    }

    @Test func schemeNames() {
        #expect(EncryptionScheme.eccV2.passKitName == "EV_ECC_v2")
        #expect(EncryptionScheme.rsaV2.passKitName == "EV_RSA_v2")
        #expect(EncryptionScheme(rawValue: "ECC_V2") == .eccV2)
    }
}
