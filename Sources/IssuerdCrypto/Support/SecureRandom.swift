import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG (`RAND_bytes`).
public enum SecureRandom {
    /// The largest request served at once; bounds a caller-controlled allocation.
    public static let maximumByteCount = 1 << 20

    /// Returns `count` random bytes.
    ///
    /// - Throws: ``CryptoError/Code/invalidLength`` for a negative or oversized count,
    ///   ``CryptoError/Code/libraryFailure`` if the DRBG cannot be seeded.
    public static func bytes(count: Int) throws -> [UInt8] {
        guard (0...maximumByteCount).contains(count) else {
            throw CryptoError(.invalidLength, "random byte count \(count) outside 0...\(maximumByteCount)")
        }
        var bytes = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return bytes }
        let status = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        guard status == 1 else { throw CryptoError(.libraryFailure, "RAND_bytes failed") }
        return bytes
    }

    /// Returns `count` random bytes in wiped-on-release storage, for keys.
    static func secureBytes(count: Int) throws -> SecureBytes {
        try SecureBytes(count: count) { buffer in
            guard RAND_bytes(buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1 else {
                throw CryptoError(.libraryFailure, "RAND_bytes failed")
            }
        }
    }
}
