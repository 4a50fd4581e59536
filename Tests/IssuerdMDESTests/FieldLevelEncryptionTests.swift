import Foundation
import IssuerdCrypto
import Testing

@testable import IssuerdMDES

/// Opening and making `encryptedPayload`s (docs/networks.md, "Field-level encryption"): every form
/// Mastercard allows opens, every broken one fails with its own reason and the one
/// `CRYPTOGRAPHY_ERROR`.
@Suite struct FieldLevelEncryptionTests {
    static let now = Date(timeIntervalSince1970: 1_780_000_000)
    static let plaintext =
        #"{"cardAccountData":{"accountNumber":"5123456789012346","expiryMonth":"09","expiryYear":"29"}}"#

    /// A payload made here from the primitives, in any of the forms Mastercard allows.
    static func make(
        _ plaintext: String = plaintext, to pair: MDESTestKeys.Pair = MDESTestKeys.issuerA,
        padding: RSA.Encryption.Padding = .oaepSHA256, keyBytes: Int = 16, withIV: Bool = true,
        fingerprint: String? = nil
    ) throws -> EncryptedPayload {
        let key = try SymmetricKey.random(byteCount: keyBytes)
        let iv = withIV ? try SecureRandom.bytes(count: 16) : [UInt8](repeating: 0, count: 16)
        let publicKey = try pair.certificate.rsaEncryptionKey()
        return EncryptedPayload(
            encryptedData: BinaryEncoding.hexString(try AESCBC.encrypt(Array(plaintext.utf8), using: key, iv: iv)),
            encryptedKey: BinaryEncoding.hexString(try RSAKeyWrap.wrap(key, to: publicKey, padding: padding)),
            publicKeyFingerprint: fingerprint ?? BinaryEncoding.hexString(pair.certificate.sha1Fingerprint),
            oaepHashingAlgorithm: padding == .oaepSHA256 ? "SHA256" : padding == .oaepSHA512 ? "SHA512" : nil,
            iv: withIV ? BinaryEncoding.hexString(iv) : nil)
    }

    static func text(_ opened: OpenedPayload) -> String {
        opened.plaintext.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    @Test(arguments: RSA.Encryption.Padding.allCases, [16, 32])
    func opensEveryPaddingAndKeySize(padding: RSA.Encryption.Padding, keyBytes: Int) throws {
        let ring = try MDESTestKeys.ring
        for withIV in [true, false] {
            let payload = try Self.make(padding: padding, keyBytes: keyBytes, withIV: withIV)
            let opened = try FieldLevelEncryption.open(payload, with: ring, now: Self.now)
            #expect(Self.text(opened) == Self.plaintext)
            #expect(opened.padding == padding)
            #expect(opened.keyByteCount == keyBytes)
        }
    }

    @Test func hexInEitherCaseAndMixed() throws {
        let ring = try MDESTestKeys.ring
        var payload = try Self.make()
        payload.encryptedData = payload.encryptedData.uppercased()
        payload.encryptedKey = payload.encryptedKey.uppercased()
        payload.publicKeyFingerprint = payload.publicKeyFingerprint.uppercased()
        payload.iv = payload.iv?.uppercased()
        #expect(Self.text(try FieldLevelEncryption.open(payload, with: ring, now: Self.now)) == Self.plaintext)
        // "Case-insensitive": one text may even mix them.
        payload.encryptedKey = String(
            payload.encryptedKey.enumerated().map {
                $0.offset % 2 == 0 ? Character($0.element.lowercased()) : $0.element
            })
        #expect(Self.text(try FieldLevelEncryption.open(payload, with: ring, now: Self.now)) == Self.plaintext)
    }

    @Test func keyChosenByAnyOfItsFourFingerprintsAmongSeveral() throws {
        let ring = try MDESTestKeys.ring
        for pair in [MDESTestKeys.issuerA, MDESTestKeys.issuerB] {
            let publicKey = try pair.certificate.rsaEncryptionKey()
            let fingerprints = [
                pair.certificate.sha1Fingerprint, pair.certificate.sha256Fingerprint, try publicKey.sha1Fingerprint,
                try publicKey.sha256Fingerprint,
            ].map(BinaryEncoding.hexString)
            #expect(Set(fingerprints).count == 4)
            for fingerprint in fingerprints {
                let opened = try FieldLevelEncryption.open(
                    try Self.make(to: pair, fingerprint: fingerprint), with: ring, now: Self.now)
                #expect(opened.key.fingerprints.contains(fingerprint))
                #expect(Self.text(opened) == Self.plaintext)
            }
        }
        // A key file without its certificate is found by its key fingerprints only.
        let keyOnly = try MDESIssuerKeyRing([try MDESIssuerKey(pemRepresentation: MDESTestKeys.issuerA.privateKeyPEM)])
        #expect(keyOnly.keys[0].fingerprints.count == 2)
        let byCertificate = try Self.make()
        expectFLEError(.unknownKeyFingerprint(byCertificate.publicKeyFingerprint)) {
            try FieldLevelEncryption.open(byCertificate, with: keyOnly, now: Self.now)
        }
        let byKey = try Self.make(
            fingerprint: BinaryEncoding.hexString(try MDESTestKeys.issuerA.privateKey.publicKey.sha256Fingerprint))
        #expect(Self.text(try FieldLevelEncryption.open(byKey, with: keyOnly, now: Self.now)) == Self.plaintext)
    }

    @Test func malformedFieldsAreRefusedBeforeAnyKeyIsUsed() throws {
        let ring = try MDESTestKeys.ring
        let good = try Self.make()
        func with(_ change: (inout EncryptedPayload) -> Void) -> EncryptedPayload {
            var payload = good
            change(&payload)
            return payload
        }
        let cases: [(String, EncryptedPayload)] = [
            ("encryptedData", with { $0.encryptedData = "" }),
            ("encryptedData", with { $0.encryptedData.removeLast() }),
            ("encryptedData", with { $0.encryptedData = "zz" + $0.encryptedData.dropFirst(2) }),
            ("encryptedData", with { $0.encryptedData = String(repeating: "00", count: 131_073) }),
            ("encryptedKey", with { $0.encryptedKey = String($0.encryptedKey.prefix(30)) }),
            ("encryptedKey", with { $0.encryptedKey += "00" }),
            ("encryptedKey", with { $0.encryptedKey = " " + $0.encryptedKey.dropFirst() }),
            ("publicKeyFingerprint", with { $0.publicKeyFingerprint = String($0.publicKeyFingerprint.prefix(30)) }),
            ("publicKeyFingerprint", with { $0.publicKeyFingerprint += String(repeating: "0", count: 26) }),
            ("iv", with { $0.iv = String($0.iv!.prefix(30)) }),
            ("iv", with { $0.iv = "g" + $0.iv!.dropFirst() }),
        ]
        for (field, payload) in cases {
            expectFLEError(.malformedField(field)) { try FieldLevelEncryption.open(payload, with: ring, now: Self.now) }
        }
        expectFLEError(.unsupportedHashAlgorithm) {
            try FieldLevelEncryption.open(with { $0.oaepHashingAlgorithm = "SHA1" }, with: ring, now: Self.now)
        }
        // Mastercard's libraries also write the names with a dash or in lowercase.
        for name in ["SHA-256", "sha256"] {
            let opened = try FieldLevelEncryption.open(
                with { $0.oaepHashingAlgorithm = name }, with: ring, now: Self.now)
            #expect(Self.text(opened) == Self.plaintext)
        }
    }

    @Test func wrongKeyWrongPaddingAlteredDataAndNonJSON() throws {
        let ring = try MDESTestKeys.ring
        // Wrapped to B but naming A.
        let toB = try Self.make(
            to: MDESTestKeys.issuerB,
            fingerprint: BinaryEncoding.hexString(MDESTestKeys.issuerA.certificate.sha1Fingerprint))
        expectFLEError(.keyUnwrapFailed) { try FieldLevelEncryption.open(toB, with: ring, now: Self.now) }
        // SHA-512 wrap declared as SHA-256, and an OAEP wrap declared as PKCS#1 v1.5.
        var declared = try Self.make(padding: .oaepSHA512)
        declared.oaepHashingAlgorithm = "SHA256"
        expectFLEError(.keyUnwrapFailed) { try FieldLevelEncryption.open(declared, with: ring, now: Self.now) }
        // PKCS#1 v1.5 has no hash: about one OAEP block in 256 passes its padding check, and the
        // "key" it yields then fails later. Whatever the step, the payload does not open.
        declared.oaepHashingAlgorithm = nil
        #expect(throws: FieldLevelEncryptionError.self) {
            try FieldLevelEncryption.open(declared, with: ring, now: Self.now)
        }
        // The last plaintext byte (the padding length) turned to 0 through the previous
        // ciphertext block: never a valid PKCS#7 padding.
        var altered = try Self.make()
        var ciphertext = try BinaryEncoding.decodeHex(altered.encryptedData)
        ciphertext[ciphertext.count - 17] ^= UInt8(16 - Self.plaintext.utf8.count % 16)
        altered.encryptedData = BinaryEncoding.hexString(ciphertext)
        expectFLEError(.decryptionFailed) { try FieldLevelEncryption.open(altered, with: ring, now: Self.now) }
        // The IV of another message: CBC opens with the first block garbled, which is no JSON.
        var otherIV = try Self.make()
        otherIV.iv = String(repeating: "ab", count: 16)
        expectFLEError(.plaintextNotJSONObject) { try FieldLevelEncryption.open(otherIV, with: ring, now: Self.now) }
        for text in ["[1,2]", "\"text\"", "not json", ""] {
            expectFLEError(.plaintextNotJSONObject) {
                try FieldLevelEncryption.open(try Self.make(text), with: ring, now: Self.now)
            }
        }
        // An unwrapped key of a length AES-CBC does not take.
        let odd = try SymmetricKey.random(byteCount: 24)
        var oddPayload = try Self.make()
        oddPayload.encryptedKey = BinaryEncoding.hexString(
            try RSAKeyWrap.wrap(odd, to: try MDESTestKeys.issuerA.certificate.rsaEncryptionKey(), padding: .oaepSHA256))
        expectFLEError(.unexpectedKeyLength(24)) {
            try FieldLevelEncryption.open(oddPayload, with: ring, now: Self.now)
        }
    }

    @Test func dataValidUntilTimestampIsEnforced() throws {
        let ring = try MDESTestKeys.ring
        func payload(_ value: String) throws -> EncryptedPayload {
            try Self.make(
                #"{"dataValidUntilTimestamp":\#(value),"cardAccountData":{"accountNumber":"5123456789012346"}}"#)
        }
        // Self.now is 2026-05-28T20:26:40Z.
        for ok in [
            "\"2026-05-28T20:56:40Z\"", "\"2026-05-28T20:26:40.000Z\"", "\"2026-05-28T22:26:40.5+02:00\"",
            "\"2026-06-27T20:26:40Z\"", "null",
        ] {
            #expect(throws: Never.self, "\(ok)") {
                try FieldLevelEncryption.open(try payload(ok), with: ring, now: Self.now)
            }
        }
        expectFLEError(.expired) {
            try FieldLevelEncryption.open(try payload("\"2026-05-28T20:26:39Z\""), with: ring, now: Self.now)
        }
        expectFLEError(.expired) {
            try FieldLevelEncryption.open(try payload("\"2026-05-28T21:26:39.999+01:00\""), with: ring, now: Self.now)
        }
        expectFLEError(.validityTooFarAhead) {
            try FieldLevelEncryption.open(try payload("\"2026-06-28T20:26:40Z\""), with: ring, now: Self.now)
        }
        for bad in [
            "\"2026-05-28 20:56:40Z\"", "\"2026-02-30T20:56:40Z\"", "\"2026-05-28T20:56:40.1234Z\"", "\"tomorrow\"",
            "1780000000",
        ] {
            expectFLEError(.malformedValidity) {
                try FieldLevelEncryption.open(try payload(bad), with: ring, now: Self.now)
            }
        }
    }

    /// Opening and decoding in one pass answers every plaintext as opening and then decoding does:
    /// the same value, or the same error (the opening's own checks first, then the decoder's).
    @Test func openAsTypeMatchesOpenThenDecode() throws {
        let ring = try MDESTestKeys.ring
        let card = #""cardAccountData":{"accountNumber":"5123456789012346"}"#
        let plaintexts = [
            "{\(card)}", #"{"dataValidUntilTimestamp":"2026-05-28T20:56:40Z",\#(card)}"#,
            #"{"dataValidUntilTimestamp":null,\#(card)}"#, "{}", "[]", "not json", "\"text\"",
            // Expired, too far ahead or malformed validity, with good and with bad card data.
            #"{"dataValidUntilTimestamp":"2026-05-28T20:26:39Z",\#(card)}"#,
            #"{"dataValidUntilTimestamp":"2026-05-28T20:26:39Z","cardAccountData":7}"#,
            #"{"dataValidUntilTimestamp":"2026-06-28T20:26:40Z",\#(card)}"#,
            #"{"dataValidUntilTimestamp":1780000000,\#(card)}"#,
            #"{"dataValidUntilTimestamp":"tomorrow","cardAccountData":{}}"#,
            // Valid or no validity, card data of the wrong shape.
            #"{"cardAccountData":{"accountNumber":5123456789012346}}"#,
            #"{"dataValidUntilTimestamp":"2026-05-28T20:56:40Z","cardAccountData":[]}"#,
            #"{"source":7,\#(card)}"#,
        ]
        func outcome(_ body: () throws -> MDESFundingAccountData) -> String {
            do {
                let data = try body()
                return "value \(data.cardAccountData?.accountNumber ?? "-") \(data.dataValidUntilTimestamp ?? "-")"
            } catch let error as FieldLevelEncryptionError {
                return "open \(error.description)"
            } catch let error as DecodingError {
                return "decode \(MDESMessageDecoder.describe(error).description)"
            } catch {
                return "other \(error)"
            }
        }
        var kinds = Set<String>()
        for plaintext in plaintexts {
            let payload = try Self.make(plaintext)
            let twoPasses = outcome {
                try FieldLevelEncryption.open(payload, with: ring, now: Self.now).decode(MDESFundingAccountData.self)
            }
            let onePass = outcome {
                try FieldLevelEncryption.open(payload, with: ring, now: Self.now, as: MDESFundingAccountData.self)
            }
            #expect(onePass == twoPasses, "\(plaintext)")
            kinds.insert(String(twoPasses.prefix { $0 != " " }))
        }
        // The list reaches values, the opening's refusals and the decoder's.
        #expect(kinds == ["value", "open", "decode"])
    }

    @Test func sealedPayloadsOpenWithTheRecipientsKey() throws {
        let mastercard = MDESTestKeys.mastercard
        let recipientRing = try MDESIssuerKeyRing([try MDESIssuerKey(pemRepresentation: mastercard.keyFilePEM)])
        for hash in FieldLevelEncryption.OAEPHash.allCases {
            for form in MastercardEncryptionKey.FingerprintForm.allCases {
                let recipient = try MastercardEncryptionKey(certificate: mastercard.certificate, fingerprint: form)
                let sealed = try FieldLevelEncryption.seal(Array(Self.plaintext.utf8), to: recipient, hash: hash)
                #expect(sealed.oaepHashingAlgorithm == hash.rawValue)
                #expect(sealed.iv?.count == 32)
                #expect(sealed.encryptedKey.count == 512)
                #expect(sealed.encryptedData == sealed.encryptedData.lowercased())
                #expect(sealed.publicKeyFingerprint == recipient.fingerprint)
                let opened = try FieldLevelEncryption.open(sealed, with: recipientRing, now: Self.now)
                #expect(Self.text(opened) == Self.plaintext)
                #expect(opened.keyByteCount == 16)
            }
        }
        let sha1 = try MastercardEncryptionKey(certificate: mastercard.certificate)
        #expect(sha1.fingerprint == BinaryEncoding.hexString(mastercard.certificate.sha1Fingerprint))
        let given = try MastercardEncryptionKey(
            certificate: mastercard.certificate, fingerprint: "4C4EAD5927F0DF8117F178EEA9308DAA58E27C2B")
        #expect(given.fingerprint == "4c4ead5927f0df8117f178eea9308daa58e27c2b")
        #expect(throws: MDESKeyError.self) {
            try MastercardEncryptionKey(certificate: mastercard.certificate, fingerprint: "not-hex")
        }
        // Encodable values go out as compact JSON with slashes unescaped.
        struct Value: Encodable { let url = "https://example.com/a" }
        let sealed = try FieldLevelEncryption.seal(encoding: Value(), to: sha1)
        #expect(
            Self.text(try FieldLevelEncryption.open(sealed, with: recipientRing, now: Self.now))
                == #"{"url":"https://example.com/a"}"#)
    }

    @Test func errorsNeverCarryThePayload() throws {
        let ring = try MDESTestKeys.ring
        var payload = try Self.make()
        payload.encryptedData = String(payload.encryptedData.dropLast(2)) + "00"
        do {
            _ = try FieldLevelEncryption.open(payload, with: ring, now: Self.now)
            Issue.record("expected a failure")
        } catch {
            let text = "\(error)"
            #expect(!text.contains(payload.encryptedData.prefix(16)))
            #expect(!text.contains(payload.encryptedKey.prefix(16)))
            #expect(!text.contains("5123456789012346"))
        }
        let opened = try FieldLevelEncryption.open(try Self.make(), with: ring, now: Self.now)
        #expect(!"\(opened)".contains("5123"))
        #expect(!String(reflecting: opened.plaintext).contains("5123"))
    }

    @Test func keyRingRefusesDuplicatesAndForeignCertificates() throws {
        let a = try MDESIssuerKey(pemRepresentation: MDESTestKeys.issuerA.keyFilePEM)
        #expect(throws: MDESKeyError.self) { try MDESIssuerKeyRing([a, a]) }
        #expect(throws: MDESKeyError.self) { try MDESIssuerKeyRing([]) }
        #expect(throws: MDESKeyError.self) {
            try MDESIssuerKey(
                pemRepresentation: MDESTestKeys.issuerA.privateKeyPEM + MDESTestKeys.issuerB.certificatePEM)
        }
        #expect(throws: (any Error).self) { try MDESIssuerKey(pemRepresentation: MDESTestKeys.issuerA.certificatePEM) }
        #expect(a.fingerprints.count == 4)
        #expect(!"\(a)".contains("PRIVATE"))
    }

    @Test func iso8601TextParsesOnlyTheMDESForm() throws {
        let cases: [(String, Double?)] = [
            ("2026-05-28T20:26:40Z", 1_780_000_000),
            ("2026-05-28T20:26:40.5Z", 1_780_000_000.5),
            ("2026-05-28T20:26:40.123Z", 1_780_000_000.123),
            ("2026-05-28T22:26:40+02:00", 1_780_000_000),
            ("2026-05-28T18:56:40-01:30", 1_780_000_000),
            ("2024-02-29T00:00:00Z", 1_709_164_800),
            ("2023-02-29T00:00:00Z", nil),
            ("2026-05-28T20:26:40", nil),
            ("2026-05-28T20:26:40.Z", nil),
            ("2026-05-28T20:26:40.1234Z", nil),
            ("2026-05-28T24:00:00Z", nil),
            ("2026-05-28T20:26:40+0200", nil),
            ("2026-05-28T20:26:40Zjunk", nil),
            ("2026-13-01T00:00:00Z", nil),
        ]
        for (text, expected) in cases {
            let date = ISO8601Text.date(text)?.timeIntervalSince1970
            if let expected {
                #expect(abs((date ?? 0) - expected) < 0.0005, "\(text)")
            } else {
                #expect(date == nil, "\(text)")
            }
        }
    }
}
