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
    public static func isValidAuthenticationCode(
        _ mac: [UInt8], authenticating data: [UInt8], using key: SymmetricKey
    ) -> Bool {
        let expected = authenticationCode(for: data, using: key)
        return mac.withUnsafeBytes { given in expected.withUnsafeBytes { constantTimeEquals(given, $0) } }
    }

    static func authenticationCode(message: UnsafeRawBufferPointer, key: SymmetricKey) -> [UInt8] {
        // A copy of the key's keyed context (``HMACKeyedContext``); fails only without memory.
        guard let context = key.hmac.copy(keyedWith: key.bytes) else {
            preconditionFailure("HMAC-SHA256 failed: \(OpenSSLErrorQueue.drain())")
        }
        defer { EVP_MAC_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: byteCount)
        var length = 0
        // OpenSSL rejects a NULL data pointer even for a zero length.
        var placeholder: UInt8 = 0
        let status = withUnsafePointer(to: &placeholder) { emptyMessage in
            EVP_MAC_update(
                context, message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyMessage, message.count) == 1
                && EVP_MAC_final(context, &out, &length, out.count) == 1
        }
        precondition(status && length == byteCount, "HMAC-SHA256 failed: \(OpenSSLErrorQueue.drain())")
        return out
    }

}
