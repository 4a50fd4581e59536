import Foundation
import IssuerdCrypto

/// Mastercard's field-level encryption ("Mastercard encryption", as its client-encryption libraries
/// do it): a one-time AES key wrapped with RSA (OAEP SHA-256 or SHA-512 with MGF1 the same hash, or
/// PKCS#1 v1.5 when `oaepHashingAlgorithm` is absent), the UTF-8 JSON plaintext under AES-CBC with
/// PKCS#7 padding, every binary field in hex.
public enum FieldLevelEncryption {
    /// The OAEP hash of a payload issuerd makes.
    public enum OAEPHash: String, Sendable, CaseIterable {
        case sha256 = "SHA256"
        case sha512 = "SHA512"

        var padding: RSA.Encryption.Padding { self == .sha256 ? .oaepSHA256 : .oaepSHA512 }
    }

    /// How far ahead `dataValidUntilTimestamp` may lie (the schema's 30 days), plus five minutes
    /// for the sender's clock.
    public static let maximumValidityAhead: TimeInterval = 30 * 86_400 + 300

    /// Opens `payload` with the key its `publicKeyFingerprint` names.
    ///
    /// Steps (as Mastercard's client-encryption libraries take them): the fields' lengths and hex; the
    /// key by fingerprint; the RSA unwrap with the named padding; AES-128 or AES-256 CBC with `iv` or
    /// 16 zero bytes; the plaintext must be a JSON object, and its `dataValidUntilTimestamp`, when
    /// present, must lie between `now` and 30 days ahead.
    ///
    /// - Parameters:
    ///   - payload: The envelope as received.
    ///   - keys: The issuer keys.
    ///   - now: The time the validity is checked against.
    /// - Returns: The plaintext and what opened it.
    /// - Throws: ``FieldLevelEncryptionError`` naming the failed step (never the bytes).
    public static func open(
        _ payload: EncryptedPayload, with keys: MDESIssuerKeyRing, now: Date
    ) throws
        -> OpenedPayload
    {
        let opened = try decrypt(payload, with: keys)
        try probeValidity(of: opened, now: now)
        return opened
    }

    /// Opens `payload` as ``open(_:with:now:)`` does and decodes its plaintext as `type` in the same
    /// pass: the validity is read from the decoded value, so the plaintext is parsed once.
    ///
    /// Fails exactly as opening and then decoding would: when the decoder refuses the plaintext,
    /// the opening's own checks (a JSON object, the validity) are made first and throw their
    /// ``FieldLevelEncryptionError``; otherwise the decoder's error is thrown as it came.
    public static func open<T: Decodable & ValidityStamped>(
        _ payload: EncryptedPayload, with keys: MDESIssuerKeyRing, now: Date, as type: T.Type
    ) throws -> T {
        let opened = try decrypt(payload, with: keys)
        let value: T
        do {
            value = try opened.readTree(as: type) ?? opened.decode(type)
        } catch {
            try probeValidity(of: opened, now: now)
            throw error
        }
        if let text = value.dataValidUntilTimestamp { try checkValidity(text, now: now) }
        return value
    }

    /// The fields checked, the key found by fingerprint, the AES key unwrapped and the plaintext
    /// decrypted: every step of opening but the plaintext's own checks.
    static func decrypt(_ payload: EncryptedPayload, with keys: MDESIssuerKeyRing) throws -> OpenedPayload {
        let ciphertext = try HexText.decode(
            payload.encryptedData, field: "encryptedData", lengths: 32...EncryptedPayload.maximumEncryptedDataLength)
        let wrappedKey = try HexText.decode(
            payload.encryptedKey, field: "encryptedKey", lengths: EncryptedPayload.encryptedKeyLengths)
        let fingerprintBytes = try HexText.decode(
            payload.publicKeyFingerprint, field: "publicKeyFingerprint", lengths: EncryptedPayload.fingerprintLengths)
        let iv =
            try payload.iv.map {
                try HexText.decode($0, field: "iv", lengths: EncryptedPayload.ivLength...EncryptedPayload.ivLength)
            } ?? [UInt8](repeating: 0, count: AESCBC.blockByteCount)
        let padding = try self.padding(named: payload.oaepHashingAlgorithm)

        let fingerprint = HexText.encode(fingerprintBytes)
        guard let key = keys.key(fingerprint: fingerprint) else {
            throw FieldLevelEncryptionError(.unknownKeyFingerprint(fingerprint))
        }
        let aesKey: SymmetricKey
        do {
            aesKey = try key.unwrapper.unwrapKey(wrappedKey, padding: padding)
        } catch {
            throw FieldLevelEncryptionError(.keyUnwrapFailed)
        }
        guard AESCBC.keyByteCounts.contains(aesKey.byteCount) else {
            throw FieldLevelEncryptionError(.unexpectedKeyLength(aesKey.byteCount))
        }
        let plaintext: SecureBytes
        do {
            plaintext = try AESCBC.decrypt(ciphertext, using: aesKey, iv: iv)
        } catch {
            throw FieldLevelEncryptionError(.decryptionFailed)
        }
        return OpenedPayload(plaintext: plaintext, key: key, padding: padding, keyByteCount: aesKey.byteCount)
    }

    /// The plaintext must be a JSON object, and its `dataValidUntilTimestamp`, when present, a
    /// time between `now` and ``maximumValidityAhead``.
    static func probeValidity(of opened: OpenedPayload, now: Date) throws {
        let probe: ValidityProbe
        do {
            probe = try opened.decode(ValidityProbe.self)
        } catch let error as FieldLevelEncryptionError {
            throw error
        } catch {
            throw FieldLevelEncryptionError(.plaintextNotJSONObject)
        }
        if let text = probe.dataValidUntilTimestamp { try checkValidity(text, now: now) }
    }

    /// `text` read as the payload's validity: well formed, not past, at most
    /// ``maximumValidityAhead`` ahead.
    static func checkValidity(_ text: String, now: Date) throws {
        let until = try validity(text)
        guard until >= now else { throw FieldLevelEncryptionError(.expired) }
        guard until.timeIntervalSince(now) <= maximumValidityAhead else {
            throw FieldLevelEncryptionError(.validityTooFarAhead)
        }
    }

    /// Encrypts `plaintext` (UTF-8 JSON) to Mastercard's key: a fresh AES-128 key and random IV,
    /// the key wrapped with RSA-OAEP of `hash`, every field present, hex in lowercase.
    ///
    /// - Throws: ``FieldLevelEncryptionError`` (`encryptionFailed`).
    public static func seal(
        _ plaintext: [UInt8], to recipient: MastercardEncryptionKey, hash: OAEPHash = .sha256
    ) throws -> EncryptedPayload {
        do {
            let aesKey = try SymmetricKey.random(byteCount: 16)
            let iv = try SecureRandom.bytes(count: AESCBC.blockByteCount)
            let ciphertext = try AESCBC.encrypt(plaintext, using: aesKey, iv: iv)
            let wrapped = try RSAKeyWrap.wrap(aesKey, to: recipient.publicKey, padding: hash.padding)
            return EncryptedPayload(
                encryptedData: HexText.encode(ciphertext), encryptedKey: HexText.encode(wrapped),
                publicKeyFingerprint: recipient.fingerprint, oaepHashingAlgorithm: hash.rawValue,
                iv: HexText.encode(iv))
        } catch {
            throw FieldLevelEncryptionError(.encryptionFailed)
        }
    }

    /// Encrypts `value`'s compact JSON (slashes unescaped, keys sorted) to Mastercard's key. A
    /// label of its own: `[UInt8]` is `Encodable` too, and must never be taken for a value.
    ///
    /// - Throws: ``FieldLevelEncryptionError`` (`encryptionFailed`), or the encoder's error.
    public static func seal(
        encoding value: some Encodable, to recipient: MastercardEncryptionKey, hash: OAEPHash = .sha256
    ) throws -> EncryptedPayload {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return try seal(Array(try encoder.encode(value)), to: recipient, hash: hash)
    }

    /// The padding `oaepHashingAlgorithm` names: `SHA256`/`SHA512` in any case, with or without a
    /// dash (Mastercard's libraries accept both spellings); absent means PKCS#1 v1.5.
    static func padding(named name: String?) throws -> RSA.Encryption.Padding {
        guard let name else { return .pkcs1v15 }
        switch name.uppercased().replacingOccurrences(of: "-", with: "") {
        case "SHA256": return .oaepSHA256
        case "SHA512": return .oaepSHA512
        default: throw FieldLevelEncryptionError(.unsupportedHashAlgorithm)
        }
    }

    /// `YYYY-MM-DDThh:mm:ss[.s{1,3}](Z|±hh:mm)`, 20–29 characters (docs/networks.md, transport rules).
    static func validity(_ text: String) throws -> Date {
        guard (20...29).contains(text.utf8.count), let date = ISO8601Text.date(text) else {
            throw FieldLevelEncryptionError(.malformedValidity)
        }
        return date
    }

    /// The one plaintext field every payload may carry that issuerd checks while opening.
    private struct ValidityProbe: Decodable {
        let dataValidUntilTimestamp: String?

        enum CodingKeys: String, CodingKey { case dataValidUntilTimestamp }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard container.contains(.dataValidUntilTimestamp),
                try !container.decodeNil(forKey: .dataValidUntilTimestamp)
            else {
                dataValidUntilTimestamp = nil
                return
            }
            guard let text = try? container.decode(String.self, forKey: .dataValidUntilTimestamp) else {
                throw FieldLevelEncryptionError(.malformedValidity)
            }
            dataValidUntilTimestamp = text
        }
    }
}

/// A decrypted plaintext that may carry `dataValidUntilTimestamp`, the one field opening checks.
public protocol ValidityStamped {
    /// The payload's validity as sent; nil when absent.
    var dataValidUntilTimestamp: String? { get }
}
