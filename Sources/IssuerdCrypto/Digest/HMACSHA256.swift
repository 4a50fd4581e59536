import COpenSSL

/// HMAC-SHA256 (RFC 2104) for webhook signatures, PAN fingerprints, OTP digests and HS256 JWTs.
public enum HMACSHA256 {
    /// The MAC length in bytes.
    public static let byteCount = 32

    /// Computes the MAC of `data` under `key`.
    public static func authenticationCode(for data: [UInt8], using key: SymmetricKey) -> [UInt8] {
        data.withUnsafeBytes { message in authenticationCode(message: message, key: key) }
    }

    /// Checks `mac` against the MAC of `data` in constant time.
    public static func isValidAuthenticationCode(_ mac: [UInt8], authenticating data: [UInt8], using key: SymmetricKey) -> Bool {
        let expected = authenticationCode(for: data, using: key)
        return mac.withUnsafeBytes { given in expected.withUnsafeBytes { constantTimeEquals(given, $0) } }
    }

    static func authenticationCode(message: UnsafeRawBufferPointer, key: SymmetricKey) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        // HMAC() with a pre-fetched EVP_MD avoids the implicit fetch; it fails only without memory.
        // OpenSSL rejects a NULL data pointer even for a zero length.
        var placeholder: UInt8 = 0
        let result = withUnsafePointer(to: &placeholder) { emptyMessage in key.withUnsafeBytes { keyBytes in
            HMAC(
                Algorithms.shared.sha256, keyBytes.baseAddress, Int32(keyBytes.count),
                message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyMessage, message.count, &out, &length)
        } }
        precondition(result != nil && length == 32, "HMAC-SHA256 failed: \(OpenSSLErrorQueue.drain())")
        return out
    }

}
