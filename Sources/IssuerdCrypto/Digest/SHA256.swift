import COpenSSL

/// SHA-256 (FIPS 180-4) over OpenSSL's pre-fetched implementation.
public enum SHA256 {
    /// The digest length in bytes.
    public static let byteCount = 32

    /// Hashes `data`.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { hash(parts: [$0]) }
    }

    /// Hashes the concatenation of `parts` without copying them into one buffer.
    static func hash(parts: [UnsafeRawBufferPointer]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: byteCount)
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new: out of memory") }
        defer { EVP_MD_CTX_free(context) }
        // Failure here means a broken provider or no memory; neither depends on the input.
        guard EVP_DigestInit_ex2(context, Algorithms.shared.sha256, nil) == 1 else {
            preconditionFailure("SHA-256 init failed")
        }
        for part in parts where part.count > 0 {
            guard EVP_DigestUpdate(context, part.baseAddress, part.count) == 1 else {
                preconditionFailure("SHA-256 update failed")
            }
        }
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1, length == 32 else {
            preconditionFailure("SHA-256 final failed")
        }
        return digest
    }
}

extension SHA256 {
    /// Hashes a list of byte strings, each prefixed with its 32-bit big-endian length, so that
    /// different splits of the same bytes never collide (used for cache keys).
    static func hash(lengthPrefixed chunks: [[UInt8]]) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new: out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestInit_ex2(context, Algorithms.shared.sha256, nil) == 1 else {
            preconditionFailure("SHA-256 init failed")
        }
        for chunk in chunks {
            var length = UInt32(truncatingIfNeeded: chunk.count).bigEndian
            _ = EVP_DigestUpdate(context, &length, 4)
            _ = chunk.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
        }
        var digest = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1 else { preconditionFailure("SHA-256 final failed") }
        return digest
    }
}
