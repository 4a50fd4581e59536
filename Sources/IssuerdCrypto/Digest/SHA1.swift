import COpenSSL

/// SHA-1 (FIPS 180-4), kept only to name certificates and keys the way Mastercard does: MDES
/// identifies an encryption key by the SHA-1 fingerprint of its certificate (docs/networks.md,
/// open point 3). Never used to sign or to authenticate anything.
public enum SHA1 {
    /// The digest length in bytes.
    public static let byteCount = 20

    /// Hashes `data`.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        MessageDigest.hash(data, algorithm: Algorithms.shared.sha1, byteCount: byteCount)
    }
}

/// One-shot digests over a pre-fetched `EVP_MD`.
enum MessageDigest {
    /// The digest of `data`; failure means a broken provider or no memory, never the input.
    static func hash(_ data: [UInt8], algorithm: OpaquePointer, byteCount: Int) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: byteCount)
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new: out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestInit_ex2(context, algorithm, nil) == 1 else { preconditionFailure("digest init failed") }
        let updated = data.withUnsafeBytes { $0.count == 0 || EVP_DigestUpdate(context, $0.baseAddress, $0.count) == 1 }
        var length: UInt32 = 0
        guard updated, EVP_DigestFinal_ex(context, &digest, &length) == 1, Int(length) == byteCount else {
            preconditionFailure("digest failed")
        }
        return digest
    }
}
