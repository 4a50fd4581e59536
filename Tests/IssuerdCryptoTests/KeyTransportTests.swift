import Foundation
import Testing

@testable import IssuerdCrypto

/// The primitives of Mastercard's field-level encryption: AES-CBC with PKCS#7, RSA key wrap with
/// OAEP SHA-256/SHA-512 and PKCS#1 v1.5, SHA-1, and certificate and key fingerprints. Vectors are
/// published (NIST, FIPS 180-4) or made by an independent implementation (Python `cryptography`,
/// Fixtures/rsa_key_wrap_vectors.json; the `openssl` CLI for the fingerprints).
@Suite struct KeyTransportTests {
    struct WrapVectors: Decodable {
        struct Vector: Decodable {
            let padding: String
            let keyHex: String
            let wrappedHex: String
        }
        let privateKeyPEM: String
        let sha1PublicKeyFingerprint: String
        let sha256PublicKeyFingerprint: String
        let vectors: [Vector]
    }

    static func wrapVectors() throws -> WrapVectors {
        try JSONDecoder().decode(WrapVectors.self, from: Data(Fixtures.bytes("rsa_key_wrap_vectors.json")))
    }

    @Test func sha1KnownAnswers() {
        // FIPS 180-4 examples.
        #expect(BinaryEncoding.hexString(SHA1.hash(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(BinaryEncoding.hexString(SHA1.hash([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
    }

    // NIST SP 800-38A F.2.1 and F.2.5 (CBC-AES128/256.Encrypt); the fifth block is the PKCS#7
    // padding block, computed by Python cryptography.
    static let nistPlaintext =
        "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52ef"
        + "f69f2445df4f9b17ad2b417be66c3710"
    static let nistIV = "000102030405060708090a0b0c0d0e0f"
    static let cbcVectors: [(key: String, ciphertext: String)] = [
        (
            "2b7e151628aed2a6abf7158809cf4f3c",
            "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b273bed6b8e3c1743b7116e69e22229516"
                + "3ff1caa1681fac09120eca307586e1a78cb82807230e1321d3fae00d18cc2012"
        ),
        (
            "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
            "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d39f23369a9d9bacfa530e26304231461"
                + "b2eb05e2c39be9fcda6c19078c6a9d1b3f461796d6b0d6b2e0c2a72b4d80e644"
        ),
    ]

    @Test(arguments: cbcVectors.indices)
    func aesCBCKnownAnswers(index: Int) throws {
        let vector = Self.cbcVectors[index]
        let key = try SymmetricKey(bytes: try Fixtures.hex(vector.key))
        let plaintext = try Fixtures.hex(Self.nistPlaintext)
        let iv = try Fixtures.hex(Self.nistIV)
        let sealed = try AESCBC.encrypt(plaintext, using: key, iv: iv)
        #expect(BinaryEncoding.hexString(sealed) == vector.ciphertext)
        let opened = try AESCBC.decrypt(try Fixtures.hex(vector.ciphertext), using: key, iv: iv)
        #expect(opened.withUnsafeBytes { Array($0) } == plaintext)
    }

    @Test func aesCBCPaddingAndSizes() throws {
        let key = try SymmetricKey.random(byteCount: 16)
        let iv = [UInt8](repeating: 0, count: 16)
        // Every length pads to the next whole block, the empty message included.
        for count in [0, 1, 15, 16, 17, 31, 32] {
            let message = [UInt8](repeating: 0x41, count: count)
            let sealed = try AESCBC.encrypt(message, using: key, iv: iv)
            #expect(sealed.count == (count / 16 + 1) * 16)
            #expect(try AESCBC.decrypt(sealed, using: key, iv: iv).withUnsafeBytes { Array($0) } == message)
        }
        // A wrong key or a changed last block breaks the padding (a changed IV alone would not:
        // CBC only garbles the first block, which is why FLE needs the channel's integrity).
        // Garbled padding is still valid about once in 256 tries, so these keys are fixed: with
        // them, the last plaintext byte comes out 0x53 (wrong key) and 0xb3 (altered block), as
        // Python `cryptography` computes too.
        let fixedKey = try SymmetricKey(bytes: Array(0..<16) as [UInt8])
        let wrongKey = try SymmetricKey(bytes: Array(16..<32) as [UInt8])
        let sealed = try AESCBC.encrypt(Array("{\"a\":1}".utf8), using: fixedKey, iv: iv)
        expectCryptoError(.authenticationFailed) { try AESCBC.decrypt(sealed, using: wrongKey, iv: iv) }
        var altered = sealed
        altered[altered.count - 1] ^= 0x5a
        expectCryptoError(.authenticationFailed) { try AESCBC.decrypt(altered, using: fixedKey, iv: iv) }
        expectCryptoError(.invalidLength) { try AESCBC.decrypt(Array(sealed.dropLast()), using: key, iv: iv) }
        expectCryptoError(.invalidLength) { try AESCBC.decrypt([], using: key, iv: iv) }
        expectCryptoError(.invalidLength) { try AESCBC.decrypt(sealed, using: key, iv: Array(iv.dropLast())) }
        expectCryptoError(.invalidLength) { try AESCBC.encrypt([1], using: try .random(byteCount: 24), iv: iv) }
        expectCryptoError(.invalidLength) { try AESCBC.encrypt([1], using: key, iv: [0]) }
    }

    /// Ciphertexts made by Python `cryptography` open to the vector's key, each with its padding only.
    @Test func rsaUnwrapsIndependentVectors() throws {
        let vectors = try Self.wrapVectors()
        let key = try RSA.Encryption.PrivateKey(pemRepresentation: vectors.privateKeyPEM)
        #expect(vectors.vectors.map(\.padding).sorted() == RSA.Encryption.Padding.allCases.map(\.rawValue).sorted())
        for vector in vectors.vectors {
            let padding = try #require(RSA.Encryption.Padding(rawValue: vector.padding))
            let unwrapped = try key.unwrapKey(try Fixtures.hex(vector.wrappedHex), padding: padding)
            #expect(unwrapped == (try SymmetricKey(bytes: try Fixtures.hex(vector.keyHex))), "\(padding)")
            // The same ciphertext under another OAEP hash never opens; PKCS#1 v1.5 under OAEP never does.
            for other in RSA.Encryption.Padding.allCases where other != padding {
                expectCryptoError(.authenticationFailed) {
                    try key.unwrapKey(try Fixtures.hex(vector.wrappedHex), padding: other)
                }
            }
        }
    }

    @Test(arguments: RSA.Encryption.Padding.allCases)
    func rsaWrapRoundTripsAndRefusesTampering(padding: RSA.Encryption.Padding) throws {
        let vectors = try Self.wrapVectors()
        let key = try RSA.Encryption.PrivateKey(pemRepresentation: vectors.privateKeyPEM)
        for byteCount in [16, 32] {
            let aesKey = try SymmetricKey.random(byteCount: byteCount)
            let wrapped = try RSAKeyWrap.wrap(aesKey, to: key.publicKey, padding: padding)
            #expect(wrapped.count == 256)
            #expect(try key.unwrapKey(wrapped, padding: padding) == aesKey)
            // Randomized: the same key never wraps to the same bytes twice.
            #expect(try RSAKeyWrap.wrap(aesKey, to: key.publicKey, padding: padding) != wrapped)
            var altered = wrapped
            altered[10] ^= 0x01
            if padding != .pkcs1v15 {
                expectCryptoError(.authenticationFailed) { try key.unwrapKey(altered, padding: padding) }
            } else {
                // PKCS#1 v1.5 has no hash: a flipped bit may still leave valid-looking padding,
                // but never the same key.
                #expect((try? key.unwrapKey(altered, padding: padding)) != aesKey)
            }
            expectCryptoError(.invalidLength) { try key.unwrapKey(Array(wrapped.dropLast()), padding: padding) }
        }
        let otherKey = TestPKI.shared.rsaLeaf.privateKeyPEM
        let stranger = try RSA.Encryption.PrivateKey(pemRepresentation: otherKey)
        let aesKey = try SymmetricKey.random(byteCount: 16)
        let wrappedToOther = try RSAKeyWrap.wrap(aesKey, to: key.publicKey, padding: padding)
        let opened = try? stranger.unwrapKey(wrappedToOther, padding: padding)
        #expect(opened != aesKey)
        // OAEP's hash makes a wrong key fail outright; PKCS#1 v1.5 may yield a wrong "key".
        if padding != .pkcs1v15 { #expect(opened == nil) }
    }

    @Test func oaepSHA512LeavesRoomForAES256Only() throws {
        // 2048-bit OAEP-SHA-512 carries at most 256 - 2·64 - 2 = 126 bytes.
        let key = try RSA.Encryption.PrivateKey(pemRepresentation: try Self.wrapVectors().privateKeyPEM)
        #expect(throws: Never.self) {
            try RSAKeyWrap.wrap(try .random(byteCount: 126), to: key.publicKey, padding: .oaepSHA512)
        }
        expectCryptoError(.invalidLength) {
            try RSAKeyWrap.wrap(try .random(byteCount: 127), to: key.publicKey, padding: .oaepSHA512)
        }
    }

    @Test func fingerprintsOfCertificateAndKey() throws {
        // Apple Root CA - G3, values from `openssl x509 … | sha1sum` / `sha256sum` and from the
        // DER SubjectPublicKeyInfo `openssl pkey -pubin -outform DER` prints.
        let root = try X509Certificate(derRepresentation: try Fixtures.appleRoot)
        #expect(BinaryEncoding.hexString(root.sha1Fingerprint) == "b52cb02fd567e0359fe8fa4d4c41037970fe01b0")
        #expect(
            BinaryEncoding.hexString(root.sha256Fingerprint)
                == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        let spki = try root.subjectPublicKeyInfoDER
        #expect(BinaryEncoding.hexString(SHA1.hash(spki)) == "28b342586d744d6f2ecf0b12e5e2b0c228c40c1b")
        #expect(
            BinaryEncoding.hexString(SHA256.hash(spki))
                == "9b219d0fbff36a5fb32090571906bceea68617c833a3f61b81e962a8e64db8af")
        // An EC key is no RSA key-wrapping key.
        expectCryptoError(.invalidKey) { try root.rsaEncryptionKey() }
        // The key fingerprints of an RSA key, against Python cryptography's.
        let vectors = try Self.wrapVectors()
        let key = try RSA.Encryption.PrivateKey(pemRepresentation: vectors.privateKeyPEM)
        #expect(BinaryEncoding.hexString(try key.publicKey.sha1Fingerprint) == vectors.sha1PublicKeyFingerprint)
        #expect(BinaryEncoding.hexString(try key.publicKey.sha256Fingerprint) == vectors.sha256PublicKeyFingerprint)
    }

    @Test func certificateFromPEMCarriesItsKey() throws {
        let leaf = TestPKI.shared.rsaLeaf
        // A key file that also holds the certificate (the order does not matter).
        let certificate = try X509Certificate(pemRepresentation: leaf.privateKeyPEM + leaf.certificatePEM)
        #expect(certificate.derRepresentation == leaf.certificateDER)
        #expect(certificate.sha1Fingerprint == SHA1.hash(leaf.certificateDER))
        let publicKey = try certificate.rsaEncryptionKey()
        #expect(try publicKey.subjectPublicKeyInfoDER == certificate.subjectPublicKeyInfoDER)
        let privateKey = try RSA.Encryption.PrivateKey(pemRepresentation: leaf.privateKeyPEM)
        #expect(try privateKey.publicKey.sha256Fingerprint == publicKey.sha256Fingerprint)
        let aesKey = try SymmetricKey.random(byteCount: 16)
        let wrapped = try RSAKeyWrap.wrap(aesKey, to: publicKey, padding: .oaepSHA512)
        #expect(try privateKey.unwrapKey(wrapped, padding: .oaepSHA512) == aesKey)
        expectCryptoError(.invalidEncoding) { try X509Certificate(pemRepresentation: leaf.privateKeyPEM) }
        expectCryptoError(.invalidEncoding) { try X509Certificate(derRepresentation: [0x30, 0x03, 0x02, 0x01, 0x00]) }
    }
}
