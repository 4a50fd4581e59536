import COpenSSL

/// AES-256-GCM (NIST SP 800-38D) with a 12-byte nonce and a 16-byte tag appended to the
/// ciphertext, the layout of ECC_V2's `encryptedPassData`.
public enum AES256GCM {
    /// The nonce (IV) length: GCM's default, so no explicit IV-length control is needed.
    public static let nonceByteCount = 12
    /// The authentication tag length.
    public static let tagByteCount = 16
    /// The largest plaintext accepted (16 MiB): far beyond any pass payload or PAN.
    public static let maximumPlaintextByteCount = 16 << 20

    /// Encrypts and authenticates `plaintext`.
    ///
    /// - Parameters:
    ///   - plaintext: The message.
    ///   - key: A 32-byte key.
    ///   - nonce: 12 bytes, never reused with the same key.
    ///   - authenticatedData: Associated data bound to the ciphertext, not encrypted.
    /// - Returns: `ciphertext ‖ tag`.
    /// - Throws: ``CryptoError/Code/invalidLength`` for a wrong key or nonce size.
    public static func seal(
        _ plaintext: [UInt8], using key: SymmetricKey, nonce: [UInt8], authenticating authenticatedData: [UInt8] = []
    ) throws -> [UInt8] {
        try checkSizes(key: key, nonce: nonce, count: plaintext.count)
        guard let context = EVP_CIPHER_CTX_new() else {
            throw CryptoError(.libraryFailure, "EVP_CIPHER_CTX_new failed")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: plaintext.count + tagByteCount)
        let ok = key.withUnsafeBytes { keyBytes -> Bool in
            guard
                EVP_EncryptInit_ex2(
                    context, Algorithms.shared.aes256GCM, keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    nonce, nil) == 1
            else {
                return false
            }
            var length: Int32 = 0
            if !authenticatedData.isEmpty {
                guard EVP_EncryptUpdate(context, nil, &length, authenticatedData, Int32(authenticatedData.count)) == 1
                else { return false }
            }
            return out.withUnsafeMutableBufferPointer { output in
                var written: Int32 = 0
                if !plaintext.isEmpty {
                    guard
                        EVP_EncryptUpdate(context, output.baseAddress, &written, plaintext, Int32(plaintext.count)) == 1
                    else { return false }
                }
                var final: Int32 = 0
                guard EVP_EncryptFinal_ex(context, output.baseAddress! + Int(written), &final) == 1,
                    Int(written + final) == plaintext.count
                else { return false }
                return EVP_CIPHER_CTX_ctrl(
                    context, EVP_CTRL_AEAD_GET_TAG, Int32(tagByteCount), output.baseAddress! + plaintext.count) == 1
            }
        }
        guard ok else { throw CryptoError(.libraryFailure, "AES-256-GCM encryption failed") }
        return out
    }

    /// Verifies and decrypts `ciphertext ‖ tag`.
    ///
    /// - Throws: ``CryptoError/Code/authenticationFailed`` when the tag does not match (altered
    ///   data, wrong key, nonce or associated data); ``CryptoError/Code/invalidLength`` for sizes.
    public static func open(
        _ sealed: [UInt8], using key: SymmetricKey, nonce: [UInt8], authenticating authenticatedData: [UInt8] = []
    ) throws -> [UInt8] {
        guard sealed.count >= tagByteCount else {
            throw CryptoError(.invalidLength, "sealed data shorter than the GCM tag")
        }
        let count = sealed.count - tagByteCount
        try checkSizes(key: key, nonce: nonce, count: count)
        guard let context = EVP_CIPHER_CTX_new() else {
            throw CryptoError(.libraryFailure, "EVP_CIPHER_CTX_new failed")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: max(count, 1))
        var tag = Array(sealed[count...])
        let ok = key.withUnsafeBytes { keyBytes -> Bool in
            guard
                EVP_DecryptInit_ex2(
                    context, Algorithms.shared.aes256GCM, keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    nonce, nil) == 1
            else {
                return false
            }
            var length: Int32 = 0
            if !authenticatedData.isEmpty {
                guard EVP_DecryptUpdate(context, nil, &length, authenticatedData, Int32(authenticatedData.count)) == 1
                else { return false }
            }
            var written: Int32 = 0
            if count > 0 {
                let status = sealed.withUnsafeBufferPointer {
                    EVP_DecryptUpdate(context, &out, &written, $0.baseAddress, Int32(count))
                }
                guard status == 1 else { return false }
            }
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tagByteCount), &tag) == 1 else {
                return false
            }
            var final: Int32 = 0
            return out.withUnsafeMutableBufferPointer {
                EVP_DecryptFinal_ex(context, $0.baseAddress! + Int(written), &final)
            } == 1
        }
        guard ok else {
            out.withUnsafeMutableBytes { zeroize($0) }
            throw CryptoError(.authenticationFailed, "AES-256-GCM tag mismatch")
        }
        return Array(out.prefix(count))
    }

    private static func checkSizes(key: SymmetricKey, nonce: [UInt8], count: Int) throws {
        guard key.byteCount == 32 else {
            throw CryptoError(.invalidLength, "AES-256 needs a 32-byte key, got \(key.byteCount)")
        }
        guard nonce.count == nonceByteCount else {
            throw CryptoError(.invalidLength, "GCM nonce must be 12 bytes, got \(nonce.count)")
        }
        guard count <= maximumPlaintextByteCount else {
            throw CryptoError(.invalidLength, "message of \(count) bytes is too large")
        }
    }
}
