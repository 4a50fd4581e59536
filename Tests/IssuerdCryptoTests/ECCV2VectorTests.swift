import Foundation
import IssuerdCore
import Testing

@_spi(Testing) @testable import IssuerdCrypto

/// The ECC_V2 known-answer vectors, byte for byte (provisioning spec section 2).
@Suite struct ECCV2VectorTests {
    @Test func ephemeralKeyMatchesTheFixture() throws {
        let v = try Fixtures.eccV2
        let ephemeral = try P256.KeyAgreement.PrivateKey(rawRepresentation: Fixtures.hex(v.ephemeralPrivateKeyHex))
        #expect(ephemeral.publicKey.x963Representation == (try Fixtures.hex(v.ephemeralPublicKeyX963Hex)))
        #expect(BinaryEncoding.base64String(ephemeral.publicKey.x963Representation) == v.ephemeralPublicKeyBase64)
    }

    @Test func sharedSecretOtherInfoAndKeyMatch() throws {
        let v = try Fixtures.eccV2
        let ephemeral = try P256.KeyAgreement.PrivateKey(rawRepresentation: Fixtures.hex(v.ephemeralPrivateKeyHex))
        let leaf = try P256.KeyAgreement.PublicKey(x963Representation: Fixtures.hex(v.leafPublicKeyX963Hex))
        let z = try ephemeral.sharedSecretFromKeyAgreement(with: leaf)
        #expect(z.unsafeBytesForTesting == (try Fixtures.hex(v.sharedSecretZHex)))
        let otherInfo = ECCV2Encryptor.otherInfo(ephemeralPublicKey: ephemeral.publicKey.x963Representation)
        #expect(otherInfo == (try Fixtures.hex(v.kdfOtherInfoHex)))
        let key = try ConcatenationKDF.deriveKey(from: z, otherInfo: otherInfo)
        #expect(key.withUnsafeBytes { Array($0) } == (try Fixtures.hex(v.derivedKeyHex)))
        #expect(ECCV2Encryptor.zeroNonce == (try Fixtures.hex(v.gcmNonceHex)))
    }

    @Test func theLeafCertificateCarriesTheVectorKey() throws {
        // The fixture's recipient key is the sandbox leaf's key: read it through the verifier's
        // parser and compare, so the vectors are tied to the real certificate.
        let v = try Fixtures.eccV2
        #expect(v.leafCertificateFile == "sandbox-leaf-ecc-crypto-services-encipherment-UC6-InMemory.der")
        let handle = try #require(X509Handle(der: Fixtures.sandboxLeaf))
        let key = try handle.publicKey()
        #expect(try ECKeyCoding.x963(of: key) == (try Fixtures.hex(v.leafPublicKeyX963Hex)))
    }

    /// Each vector both ways ECDH runs: OpenSSL's multiplication of an arbitrary point, and the
    /// recipient's table of multiples that a key gets on its second seal.
    @Test(arguments: ["dummy", "card", "card-hangul"], [false, true])
    func ciphertextMatches(name: String, throughTable: Bool) throws {
        let v = try Fixtures.eccV2
        let vector = try #require(v.vectors.first { $0.name == name })
        let encryptor = ECCV2Encryptor(
            fixedEphemeralKey: try P256.KeyAgreement.PrivateKey(
                rawRepresentation: Fixtures.hex(v.ephemeralPrivateKeyHex)))
        let leaf = try P256.KeyAgreement.PublicKey(x963Representation: Fixtures.hex(v.leafPublicKeyX963Hex))
        if throughTable { try leaf.prepareMultiples() }
        #expect(leaf.sealsThroughTable == throughTable)
        let output = try encryptor.seal(plaintext: Array(vector.plaintextUtf8.utf8), to: leaf)
        #expect(output.encryptedPassData == (try Fixtures.hex(vector.encryptedPassDataHex)))
        #expect(BinaryEncoding.base64String(output.encryptedPassData) == vector.encryptedPassDataBase64)
        #expect(output.ephemeralPublicKey == (try Fixtures.hex(v.ephemeralPublicKeyX963Hex)))
    }

    /// The payload type itself produces the vectors' plaintext bytes (key order, hex, MM/YY,
    /// unescaped slash, raw UTF-8 Hangul), so sealing a payload reproduces the ciphertext.
    @Test(arguments: [
        ("card", "4111111111111111", "11/28", "John Appleseed", "ea85a73a", "0a0b0c0d"),
        ("card-hangul", "5399999999999999", "03/29", "홍길동", "9c023092", "30450221"),
    ])
    func payloadReproducesVector(_ row: (String, String, String, String, String, String)) throws {
        let v = try Fixtures.eccV2
        let vector = try #require(v.vectors.first { $0.name == row.0 })
        let payload = try PassPayload(
            primaryAccountNumber: try #require(PrimaryAccountNumber(row.1)),
            expiration: try #require(CardExpiration(row.2)), name: row.3,
            nonce: try BinaryEncoding.decodeHex(row.4), nonceSignature: try BinaryEncoding.decodeHex(row.5))
        #expect(payload.jsonBytes() == Array(vector.plaintextUtf8.utf8))
        let encryptor = ECCV2Encryptor(
            fixedEphemeralKey: try P256.KeyAgreement.PrivateKey(
                rawRepresentation: Fixtures.hex(v.ephemeralPrivateKeyHex)))
        let leaf = try P256.KeyAgreement.PublicKey(x963Representation: Fixtures.hex(v.leafPublicKeyX963Hex))
        let output = try encryptor.seal(plaintext: payload.jsonBytes(), to: leaf)
        #expect(output.encryptedPassData == (try Fixtures.hex(vector.encryptedPassDataHex)))
        #expect(!payload.description.contains(row.1))
    }

    @Test func freshEphemeralKeyEveryCall() throws {
        let v = try Fixtures.eccV2
        let leaf = try P256.KeyAgreement.PublicKey(x963Representation: Fixtures.hex(v.leafPublicKeyX963Hex))
        let encryptor = ECCV2Encryptor()
        let first = try encryptor.seal(plaintext: Array("same".utf8), to: leaf)
        let second = try encryptor.seal(plaintext: Array("same".utf8), to: leaf)
        #expect(first.ephemeralPublicKey != second.ephemeralPublicKey)
        #expect(first.encryptedPassData != second.encryptedPassData)
        #expect(first.ephemeralPublicKey.count == 65 && first.ephemeralPublicKey[0] == 0x04)
    }

    /// A key gets its table on its second seal, and from then on every seal gives what OpenSSL's
    /// own ECDH (`EVP_PKEY_derive`) gives, for random recipients and random ephemeral keys.
    @Test func tableSealsAgreeWithOpenSSLsECDH() throws {
        let plaintext = Array(#"{"primaryAccountNumber":"4111111111111111"}"#.utf8)
        for _ in 0..<4 {
            let leaf = try P256.KeyAgreement.PrivateKey().publicKey
            _ = try ECCV2Encryptor().seal(plaintext: plaintext, to: leaf)
            #expect(!leaf.sealsThroughTable)
            _ = try ECCV2Encryptor().seal(plaintext: plaintext, to: leaf)
            // At most `tableLimit` tables live at once, and other suites' keys may hold them.
            if !leaf.sealsThroughTable { try leaf.prepareMultiples() }
            #expect(leaf.sealsThroughTable)
            for _ in 0..<16 {
                let ephemeral = try P256.KeyAgreement.PrivateKey()
                let output = try ECCV2Encryptor(fixedEphemeralKey: ephemeral).seal(plaintext: plaintext, to: leaf)
                let z = try ephemeral.sharedSecretFromKeyAgreement(with: leaf)
                let key = try ConcatenationKDF.deriveKey(
                    from: z,
                    otherInfo: ECCV2Encryptor.otherInfo(ephemeralPublicKey: ephemeral.publicKey.x963Representation))
                #expect(output.ephemeralPublicKey == ephemeral.publicKey.x963Representation)
                #expect(
                    output.encryptedPassData
                        == (try AES256GCM.seal(plaintext, using: key, nonce: ECCV2Encryptor.zeroNonce)))
            }
        }
    }

    /// Keys sealed to twice get tables only up to the process's limit.
    @Test func tablesAreBounded() throws {
        let plaintext = Array("limit".utf8)
        let keys = try (0..<(P256PeerMultiples.tableLimit + 3)).map { _ in try P256.KeyAgreement.PrivateKey().publicKey
        }
        for key in keys {
            _ = try ECCV2Encryptor().seal(plaintext: plaintext, to: key)
            _ = try ECCV2Encryptor().seal(plaintext: plaintext, to: key)
        }
        #expect(keys.filter(\.sealsThroughTable).count <= P256PeerMultiples.tableLimit)
    }

    /// Threads sealing to one key while its table is built and published: every seal still
    /// matches OpenSSL's own ECDH (under `scripts/test --sanitize thread`, also no race).
    @Test func concurrentSealsWhileTheTableIsBuiltAgree() throws {
        let leaf = try P256.KeyAgreement.PrivateKey().publicKey
        let plaintext = Array("concurrent".utf8)
        let mismatches = Lock(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<12 {
                do {
                    let ephemeral = try P256.KeyAgreement.PrivateKey()
                    let output = try ECCV2Encryptor(fixedEphemeralKey: ephemeral).seal(plaintext: plaintext, to: leaf)
                    let key = try ConcatenationKDF.deriveKey(
                        from: try ephemeral.sharedSecretFromKeyAgreement(with: leaf),
                        otherInfo: ECCV2Encryptor.otherInfo(ephemeralPublicKey: ephemeral.publicKey.x963Representation))
                    let expected = try AES256GCM.seal(plaintext, using: key, nonce: ECCV2Encryptor.zeroNonce)
                    if output.encryptedPassData != expected { mismatches.withLock { $0 += 1 } }
                } catch {
                    mismatches.withLock { $0 += 1 }
                }
            }
        }
        #expect(mismatches.withLock { $0 } == 0)
    }
}
