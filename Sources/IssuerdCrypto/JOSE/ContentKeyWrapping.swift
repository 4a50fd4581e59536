/// The key-encryption side of `A256GCMKW` (RFC 7518 §4.7): AES-256-GCM under the key-encryption
/// key, applied to one JWE content key. Either the key in memory (``SymmetricKey``) or a key
/// that never leaves an HSM (the service adapts its PKCS#11 AES-GCM key to this protocol), so
/// ``CompactJWE`` seals the same envelope wherever the key lives.
public protocol ContentKeyWrapping: Sendable {
    /// `contentKey` encrypted with AES-256-GCM under the key-encryption key, with `nonce` and
    /// no additional data.
    ///
    /// - Parameters:
    ///   - contentKey: The 32-byte content key, lent for the call.
    ///   - nonce: 12 fresh random bytes (the header's `iv`).
    /// - Returns: `ciphertext ‖ tag`: 32 bytes of encrypted key, then the 16-byte tag.
    /// - Throws: the wrapper's error; never returns a partial value.
    func wrapContentKey(_ contentKey: [UInt8], nonce: [UInt8]) throws -> [UInt8]
}

extension SymmetricKey: ContentKeyWrapping {
    /// OpenSSL's AES-256-GCM under this key (``AES256GCM``).
    public func wrapContentKey(_ contentKey: [UInt8], nonce: [UInt8]) throws -> [UInt8] {
        try AES256GCM.seal(contentKey, using: self, nonce: nonce)
    }
}
