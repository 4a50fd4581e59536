import Foundation

/// JSON Web Encryption (RFC 7516) in compact serialization with one key-management algorithm and
/// one content encryption: `A256GCMKW` (RFC 7518 §4.7: the content key encrypted with AES-256-GCM
/// under a shared key-encryption key, the wrap's `iv` and `tag` carried as header parameters) and
/// `A256GCM` (§5.3: the content encrypted with AES-256-GCM under that content key, the additional
/// data being the ASCII of the encoded protected header). The content is OpenSSL's AES-256-GCM
/// (``AES256GCM``); the key wrap is the ``ContentKeyWrapping`` given: OpenSSL's too under a key
/// in memory, or the HSM's under a key that never leaves it. Every call draws a fresh random
/// content key and two fresh random IVs.
///
/// This is the envelope of Visa's encrypted payment instrument (docs/networks.md); nothing in it
/// is Visa's but the caller's header parameters.
public enum CompactJWE {
    /// A header parameter's value: a JSON string or a JSON integer.
    public enum HeaderValue: Sendable, Equatable, Encodable {
        case string(String)
        case integer(Int64)

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let text): try container.encode(text)
            case .integer(let number): try container.encode(number)
            }
        }
    }

    /// `alg`: the content key wrapped with AES-256-GCM.
    public static let keyManagementAlgorithm = "A256GCMKW"
    /// `enc`: the content encrypted with AES-256-GCM.
    public static let contentEncryption = "A256GCM"
    /// The parameters this type writes itself; a caller's header may not name them.
    public static let reservedHeaderNames: Set<String> = ["alg", "enc", "iv", "tag", "zip", "crit"]
    /// The content key's length (AES-256).
    public static let contentKeyByteCount = 32

    /// The key-encryption key of a shared secret: SHA-256 of its bytes (Visa's key derivation for
    /// message-level encryption with an API key and shared secret).
    ///
    /// - Throws: ``CryptoError/Code/invalidLength`` for an empty secret.
    public static func keyEncryptionKey(sharedSecret: some Collection<UInt8>) throws -> SymmetricKey {
        guard !sharedSecret.isEmpty else { throw CryptoError(.invalidLength, "the shared secret is empty") }
        var digest = SHA256.hash(Array(sharedSecret))
        defer { digest.withUnsafeMutableBytes { zeroize($0) } }
        return try SymmetricKey(bytes: digest)
    }

    /// Encrypts `plaintext` to the holder of `keyEncryptionKey`.
    ///
    /// - Parameters:
    ///   - plaintext: The content (for Visa, the payment instrument's JSON).
    ///   - keyEncryptionKey: A 32-byte AES key (``keyEncryptionKey(sharedSecret:)``), or a key
    ///     in an HSM that wraps with AES-256-GCM.
    ///   - header: Further protected header parameters (`kid`, `typ`, …), written after `alg`,
    ///     `enc`, `iv` and `tag`.
    /// - Returns: The five base64url parts joined by dots: protected header, encrypted key, IV,
    ///   ciphertext, tag.
    /// - Throws: ``CryptoError/Code/invalidInput`` for a header naming a reserved parameter;
    ///   ``CryptoError/Code/invalidLength`` for a key that is not 32 bytes or a wrap that is not
    ///   48 bytes; the wrapper's own error.
    public static func seal(
        _ plaintext: [UInt8], keyEncryptionKey: some ContentKeyWrapping, header: [String: HeaderValue]
    ) throws -> String {
        if let reserved = header.keys.first(where: reservedHeaderNames.contains) {
            throw CryptoError(.invalidInput, "the JWE header parameter \(reserved) is written by the sealer")
        }
        let contentKey = try SymmetricKey.random(byteCount: contentKeyByteCount)
        var contentKeyBytes = contentKey.withUnsafeBytes { Array($0) }
        defer { contentKeyBytes.withUnsafeMutableBytes { zeroize($0) } }
        let wrapIV = try SecureRandom.bytes(count: AES256GCM.nonceByteCount)
        let wrapped = try keyEncryptionKey.wrapContentKey(contentKeyBytes, nonce: wrapIV)
        guard wrapped.count == contentKeyByteCount + AES256GCM.tagByteCount else {
            throw CryptoError(.invalidLength, "the content key's wrap is \(wrapped.count) bytes, not 48")
        }
        let encryptedKey = wrapped.prefix(contentKeyByteCount)
        let wrapTag = wrapped.suffix(AES256GCM.tagByteCount)

        var parameters = header
        parameters["alg"] = .string(keyManagementAlgorithm)
        parameters["enc"] = .string(contentEncryption)
        parameters["iv"] = .string(BinaryEncoding.base64URLString(wrapIV))
        parameters["tag"] = .string(BinaryEncoding.base64URLString(wrapTag))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let protected = BinaryEncoding.base64URLString(Array(try encoder.encode(parameters)))

        let contentIV = try SecureRandom.bytes(count: AES256GCM.nonceByteCount)
        let sealed = try AES256GCM.seal(
            plaintext, using: contentKey, nonce: contentIV, authenticating: Array(protected.utf8))
        let ciphertext = sealed.prefix(sealed.count - AES256GCM.tagByteCount)
        let tag = sealed.suffix(AES256GCM.tagByteCount)
        return [
            protected, BinaryEncoding.base64URLString(encryptedKey), BinaryEncoding.base64URLString(contentIV),
            BinaryEncoding.base64URLString(ciphertext), BinaryEncoding.base64URLString(tag),
        ].joined(separator: ".")
    }
}
