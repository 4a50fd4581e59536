/// A secret symmetric key (AES, HMAC), only ever produced by a KDF, a key ring or the DRBG.
public struct SymmetricKey: Sendable, Equatable, CustomStringConvertible {
    let bytes: SecureBytes
    /// The key's HMAC context, keyed on first use (``HMACSHA256``).
    let hmac = HMACKeyedContext()

    /// The key length in bytes.
    public var byteCount: Int { bytes.count }

    /// Wraps existing key bytes (a configured secret, a test vector).
    ///
    /// - Throws: ``CryptoError/Code/invalidLength`` for an empty key or one over 1 KiB.
    public init(bytes: some Collection<UInt8>) throws {
        guard (1...1024).contains(bytes.count) else {
            throw CryptoError(.invalidLength, "symmetric key of \(bytes.count) bytes")
        }
        self.bytes = SecureBytes(bytes)
    }

    init(secure: SecureBytes) { bytes = secure }

    /// A fresh random key of `byteCount` bytes (32 for AES-256).
    public static func random(byteCount: Int = 32) throws -> SymmetricKey {
        guard (1...1024).contains(byteCount) else {
            throw CryptoError(.invalidLength, "symmetric key of \(byteCount) bytes")
        }
        return SymmetricKey(secure: try SecureRandom.secureBytes(count: byteCount))
    }

    /// Lends the key bytes for the duration of `body`.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try bytes.withUnsafeBytes(body)
    }

    public var description: String { "SymmetricKey(\(byteCount * 8) bits)" }

    /// Equal bytes (in constant time); the cached HMAC context is not part of the key's value.
    public static func == (lhs: SymmetricKey, rhs: SymmetricKey) -> Bool { lhs.bytes == rhs.bytes }
}
