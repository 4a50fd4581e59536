import COpenSSL

/// One-shot `EVP_DigestSign`/`EVP_DigestVerify` with SHA-256, shared by ECDSA and RSA PKCS#1 v1.5.
enum DigestSignature {
    static func sign(_ message: [UInt8], with key: PKeyHandle) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError(.libraryFailure, "EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, Algorithms.shared.sha256, nil, key.pointer) == 1 else {
            throw CryptoError(.invalidKey, "key cannot sign")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw CryptoError(.libraryFailure, "signature size query failed")
        }
        var out = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &out, &length, message, message.count) == 1 else {
            throw CryptoError(.libraryFailure, "signing failed")
        }
        return Array(out.prefix(length))
    }

    static func verify(_ signature: [UInt8], message: [UInt8], with key: PKeyHandle) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, Algorithms.shared.sha256, nil, key.pointer) == 1 else {
            _ = OpenSSLErrorQueue.drain()
            return false
        }
        let status = EVP_DigestVerify(context, signature, signature.count, message, message.count)
        // A bad signature queues an error; drop it so it cannot leak into a later message.
        if status != 1 { _ = OpenSSLErrorQueue.drain() }
        return status == 1
    }
}
