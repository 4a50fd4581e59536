import Testing

@testable import IssuerdCrypto

/// Published known-answer vectors for the primitives, and a negative test for each failure.
@Suite struct PrimitiveTests {
    @Test func sha256KnownAnswers() {
        // FIPS 180-4 examples.
        #expect(
            BinaryEncoding.hexString(SHA256.hash(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            BinaryEncoding.hexString(SHA256.hash([]))
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func hmacRFC4231() throws {
        // RFC 4231 test cases 1 and 2.
        let key1 = try SymmetricKey(bytes: [UInt8](repeating: 0x0b, count: 20))
        #expect(
            BinaryEncoding.hexString(HMACSHA256.authenticationCode(for: Array("Hi There".utf8), using: key1))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        let key2 = try SymmetricKey(bytes: Array("Jefe".utf8))
        let mac = HMACSHA256.authenticationCode(for: Array("what do ya want for nothing?".utf8), using: key2)
        #expect(BinaryEncoding.hexString(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(
            HMACSHA256.isValidAuthenticationCode(
                mac, authenticating: Array("what do ya want for nothing?".utf8), using: key2))
        var bad = mac
        bad[0] ^= 1
        #expect(
            !HMACSHA256.isValidAuthenticationCode(
                bad, authenticating: Array("what do ya want for nothing?".utf8), using: key2))
        #expect(HMACSHA256.authenticationCode(for: [], using: key2).count == 32)
    }

    @Test func hmacRFC4231LongKeyAndReuse() throws {
        // RFC 4231 test case 4 (25-byte key) and 6 (a 131-byte key, hashed first).
        let key4 = try SymmetricKey(bytes: Array(1...25))
        let data4 = [UInt8](repeating: 0xcd, count: 50)
        let expected4 = "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
        let key6 = try SymmetricKey(bytes: [UInt8](repeating: 0xaa, count: 131))
        let data6 = Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        let expected6 = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        // The keyed context is copied for each MAC: using it never changes the next answer.
        for _ in 0..<3 {
            #expect(BinaryEncoding.hexString(HMACSHA256.authenticationCode(for: data4, using: key4)) == expected4)
            #expect(BinaryEncoding.hexString(HMACSHA256.authenticationCode(for: data6, using: key6)) == expected6)
            #expect(BinaryEncoding.hexString(HMACSHA256.authenticationCode(for: [], using: key4)) != expected4)
        }
        // A copy of a key shares its keyed context and answers the same.
        let copy = key6
        #expect(BinaryEncoding.hexString(HMACSHA256.authenticationCode(for: data6, using: copy)) == expected6)
        #expect(copy == key6)
        #expect(try SymmetricKey(bytes: [UInt8](repeating: 0xaa, count: 131)) == key6)
    }

    @Test func hmacSharedKeyAcrossThreads() async throws {
        // Many threads key the same fresh key at once (one publishes its context, the others
        // free theirs) and then share it: every MAC is the published vector's.
        let key = try SymmetricKey(bytes: [UInt8](repeating: 0x0b, count: 20))
        let message = Array("Hi There".utf8)
        let expected = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        let answers = await withTaskGroup(of: Set<String>.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var seen = Set<String>()
                    for _ in 0..<500 {
                        seen.insert(BinaryEncoding.hexString(HMACSHA256.authenticationCode(for: message, using: key)))
                    }
                    return seen
                }
            }
            return await group.reduce(into: Set<String>()) { $0.formUnion($1) }
        }
        #expect(answers == [expected])
    }

    @Test func hkdfRFC5869() throws {
        // RFC 5869 appendix A.1.
        let ikm = try SymmetricKey(bytes: [UInt8](repeating: 0x0b, count: 22))
        let okm = try HKDF.deriveKey(
            inputKey: ikm, salt: try BinaryEncoding.decodeHex("000102030405060708090a0b0c"),
            info: try BinaryEncoding.decodeHex("f0f1f2f3f4f5f6f7f8f9"),
            outputByteCount: 42)
        #expect(
            okm.withUnsafeBytes { BinaryEncoding.hexString($0) }
                == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        expectCryptoError(.invalidLength) { try HKDF.deriveKey(inputKey: ikm, salt: [1], info: [], outputByteCount: 0) }
    }

    @Test func concatenationKDFMultiRoundAndBounds() throws {
        // Two rounds: the first 32 bytes equal the one-round output, the rest differ.
        let z = try SymmetricKey(bytes: [UInt8](repeating: 7, count: 32))
        let one = try z.withUnsafeBytes {
            try ConcatenationKDF.deriveKey(z: $0, otherInfo: [1, 2, 3], outputByteCount: 32)
        }
        let two = try z.withUnsafeBytes {
            try ConcatenationKDF.deriveKey(z: $0, otherInfo: [1, 2, 3], outputByteCount: 48)
        }
        #expect(two.withUnsafeBytes { Array($0.prefix(32)) } == one.withUnsafeBytes { Array($0) })
        #expect(two.byteCount == 48)
        #expect(throws: CryptoError.self) {
            try z.withUnsafeBytes { try ConcatenationKDF.deriveKey(z: $0, otherInfo: [], outputByteCount: 2000) }
        }
    }

    @Test func aesGCMKnownAnswer() throws {
        // NIST GCM test case 16 (AES-256, 12-byte IV, AAD) from the GCM specification.
        let key = try SymmetricKey(
            bytes: try BinaryEncoding.decodeHex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"))
        let iv = try BinaryEncoding.decodeHex("cafebabefacedbaddecaf888")
        let plaintext = try BinaryEncoding.decodeHex(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
        )
        let aad = try BinaryEncoding.decodeHex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let sealed = try AES256GCM.seal(plaintext, using: key, nonce: iv, authenticating: aad)
        #expect(
            BinaryEncoding.hexString(sealed)
                == "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
                + "76fc6ece0f4e1768cddf8853bb2d551b")
        #expect(try AES256GCM.open(sealed, using: key, nonce: iv, authenticating: aad) == plaintext)
    }

    @Test func aesGCMRejectsTampering() throws {
        let key = try SymmetricKey.random()
        let nonce = try SecureRandom.bytes(count: 12)
        let sealed = try AES256GCM.seal(Array("secret".utf8), using: key, nonce: nonce, authenticating: [1])
        var flipped = sealed
        flipped[0] ^= 1
        expectCryptoError(.authenticationFailed) {
            try AES256GCM.open(flipped, using: key, nonce: nonce, authenticating: [1])
        }
        expectCryptoError(.authenticationFailed) {
            try AES256GCM.open(sealed, using: key, nonce: nonce, authenticating: [2])
        }
        expectCryptoError(.authenticationFailed) {
            try AES256GCM.open(sealed, using: try SymmetricKey.random(), nonce: nonce, authenticating: [1])
        }
        expectCryptoError(.invalidLength) { try AES256GCM.open([1, 2, 3], using: key, nonce: nonce) }
        expectCryptoError(.invalidLength) { try AES256GCM.seal([1], using: key, nonce: [0, 0, 0]) }
        expectCryptoError(.invalidLength) {
            try AES256GCM.seal([1], using: try SymmetricKey(bytes: [1, 2, 3]), nonce: nonce)
        }
        // Empty plaintext round-trips (tag only).
        let empty = try AES256GCM.seal([], using: key, nonce: nonce)
        #expect(empty.count == 16)
        #expect(try AES256GCM.open(empty, using: key, nonce: nonce) == [])
    }

    @Test func rsaOAEPRoundTripAndFailures() throws {
        let recipient = try RSA.Encryption.PrivateKey(bits: 2048)
        let key = try SymmetricKey.random()
        let wrapped = try RSAOAEP.wrap(key, to: recipient.publicKey)
        #expect(wrapped.count == 256)
        #expect(try RSAOAEP.unwrap(wrapped, with: recipient) == key)
        var altered = wrapped
        altered[10] ^= 1
        expectCryptoError(.authenticationFailed) { try RSAOAEP.unwrap(altered, with: recipient) }
        expectCryptoError(.invalidLength) { try RSAOAEP.unwrap(Array(wrapped.prefix(10)), with: recipient) }
        expectCryptoError(.invalidLength) {
            try RSAOAEP.wrap(try SymmetricKey(bytes: [UInt8](repeating: 1, count: 300)), to: recipient.publicKey)
        }
    }

    @Test func ecdsaSignVerifyAndSignatureForms() throws {
        let key = try P256.Signing.PrivateKey()
        let message = Array("header.payload".utf8)
        let signature = try key.signature(for: message)
        #expect(signature.rawRepresentation.count == 64)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature, for: Array("other".utf8)))
        let roundTrip = try P256.Signing.ECDSASignature(derRepresentation: signature.derRepresentation)
        #expect(roundTrip == signature)
        let fromRaw = try P256.Signing.ECDSASignature(rawRepresentation: signature.rawRepresentation)
        #expect(key.publicKey.isValidSignature(fromRaw, for: message))
        let imported = try P256.Signing.PublicKey(pemRepresentation: key.publicKey.pemRepresentation)
        #expect(imported.isValidSignature(signature, for: message))
        expectCryptoError(.invalidSignatureEncoding) { try P256.Signing.ECDSASignature(rawRepresentation: [1, 2, 3]) }
        expectCryptoError(.invalidSignatureEncoding) {
            try P256.Signing.ECDSASignature(derRepresentation: [0x30, 0x03, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00])
        }
        expectCryptoError(.invalidSignatureEncoding) {
            try P256.Signing.ECDSASignature(derRepresentation: signature.derRepresentation + [0])
        }
    }

    @Test func rsaPKCS1SignVerify() throws {
        let key = try RSA.Signing.PrivateKey(bits: 2048)
        let message = Array("5399999999999999|0329|2030-01-01T00:00:00Z".utf8)
        let signature = try key.signature(for: message)
        #expect(signature.count == 256)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature, for: message + [0]))
        let imported = try RSA.Signing.PrivateKey(pemRepresentation: key.pemRepresentation)
        // PKCS#1 v1.5 is deterministic: the imported key gives the same signature.
        #expect(try imported.signature(for: message) == signature)
    }

    @Test func keyImportRejectsWrongKeys() throws {
        var notOnCurve = [UInt8](repeating: 0, count: 65)
        notOnCurve[0] = 0x04
        notOnCurve[64] = 1
        expectCryptoError(.invalidKey) { try P256.KeyAgreement.PublicKey(x963Representation: notOnCurve) }
        expectCryptoError(.invalidKey) { try P256.KeyAgreement.PublicKey(x963Representation: [0x04, 1, 2]) }
        expectCryptoError(.invalidKey) {
            try P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        }
        expectCryptoError(.invalidKey) {
            try P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0xff, count: 32))
        }
        expectCryptoError(.invalidKey) { try P256.KeyAgreement.PrivateKey(rawRepresentation: [1]) }
        expectCryptoError(.invalidKey) {
            try P256.KeyAgreement.PrivateKey(
                pemRepresentation: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        }
        let rsa = try RSA.Signing.PrivateKey(bits: 2048)
        expectCryptoError(.invalidKey) { try P256.KeyAgreement.PrivateKey(pemRepresentation: rsa.pemRepresentation) }
        let ec = try P256.Signing.PrivateKey()
        expectCryptoError(.invalidKey) { try RSA.Signing.PrivateKey(pemRepresentation: ec.pemRepresentation) }
        expectCryptoError(.invalidKey) { try RSA.Signing.PrivateKey(bits: 1024) }
        // A P-256 PEM round trip keeps the key.
        let agreement = try P256.KeyAgreement.PrivateKey()
        let again = try P256.KeyAgreement.PrivateKey(pemRepresentation: agreement.pemRepresentation)
        #expect(again.publicKey.x963Representation == agreement.publicKey.x963Representation)
    }

    @Test func ecdhIsSymmetric() throws {
        let a = try P256.KeyAgreement.PrivateKey()
        let b = try P256.KeyAgreement.PrivateKey()
        let ab = try a.sharedSecretFromKeyAgreement(with: b.publicKey)
        let ba = try b.sharedSecretFromKeyAgreement(with: a.publicKey)
        #expect(ab.bytes == ba.bytes)
        #expect("\(ab)" == "SharedSecret(****)")
        #expect(!"\(a)".contains(BinaryEncoding.hexString(ab.unsafeBytesForTestingProxy)))
    }

    @Test func secretsDoNotPrint() throws {
        let key = try SymmetricKey(bytes: [UInt8](repeating: 0xab, count: 32))
        #expect("\(key)" == "SymmetricKey(256 bits)")
        let bytes = SecureBytes([0xde, 0xad, 0xbe, 0xef])
        #expect(!"\(bytes)".contains("de") && !String(reflecting: bytes).contains("dead"))
        var dumped = ""
        dump(bytes, to: &dumped)
        #expect(!dumped.contains("222"))  // 0xde
    }

    @Test func randomAndConstantTime() throws {
        let a = try SecureRandom.bytes(count: 32)
        let b = try SecureRandom.bytes(count: 32)
        #expect(a != b)
        #expect(try SecureRandom.bytes(count: 0).isEmpty)
        expectCryptoError(.invalidLength) { try SecureRandom.bytes(count: -1) }
        expectCryptoError(.invalidLength) { try SecureRandom.bytes(count: SecureRandom.maximumByteCount + 1) }
        #expect(constantTimeEquals(a, a))
        #expect(!constantTimeEquals(a, b))
        #expect(!constantTimeEquals(a, Array(a.prefix(31))))
        #expect(constantTimeEquals([], []))
        expectCryptoError(.invalidLength) { try SymmetricKey(bytes: []) }
    }
}

extension SharedSecret {
    /// Test-only view used to check that nothing prints the secret.
    var unsafeBytesForTestingProxy: [UInt8] { bytes.withUnsafeBytes { Array($0) } }
}
