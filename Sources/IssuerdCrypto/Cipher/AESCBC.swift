import COpenSSL

/// AES in CBC mode with PKCS#7 padding (NIST SP 800-38A; RFC 5652 §6.3 padding), 128- or 256-bit
/// keys: the data cipher of Mastercard's field-level encryption (Mastercard's client-encryption libraries).
///
/// CBC carries no integrity tag. A padding error after decryption says the key, the IV or the
/// ciphertext is wrong, nothing more; callers must not tell their peer which step failed.
public enum AESCBC {
    /// The AES block and IV length.
    public static let blockByteCount = 16
    /// The key lengths accepted: AES-128 and AES-256.
    public static let keyByteCounts: Set<Int> = [16, 32]
    /// The largest message accepted (16 MiB), far beyond any MDES payload.
    public static let maximumByteCount = 16 << 20

    /// Encrypts and pads `plaintext`.
    ///
    /// - Parameters:
    ///   - plaintext: The message (may be empty: one block of padding results).
    ///   - key: A 16- or 32-byte key.
    ///   - iv: 16 bytes; fresh random bytes per message.
    /// - Returns: The ciphertext, a whole number of blocks, always longer than `plaintext`.
    /// - Throws: ``CryptoError/Code/invalidLength`` for a wrong key or IV size or a huge message.
    public static func encrypt(_ plaintext: [UInt8], using key: SymmetricKey, iv: [UInt8]) throws -> [UInt8] {
        let cipher = try checkSizes(key: key, iv: iv, count: plaintext.count)
        guard let context = EVP_CIPHER_CTX_new() else {
            throw CryptoError(.libraryFailure, "EVP_CIPHER_CTX_new failed")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: plaintext.count + blockByteCount)
        var total = 0
        let ok = key.withUnsafeBytes { keyBytes -> Bool in
            guard
                EVP_EncryptInit_ex2(context, cipher, keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), iv, nil)
                    == 1
            else { return false }
            return out.withUnsafeMutableBufferPointer { output in
                var written: Int32 = 0
                if !plaintext.isEmpty {
                    guard
                        EVP_EncryptUpdate(context, output.baseAddress, &written, plaintext, Int32(plaintext.count)) == 1
                    else { return false }
                }
                var final: Int32 = 0
                guard EVP_EncryptFinal_ex(context, output.baseAddress! + Int(written), &final) == 1 else {
                    return false
                }
                total = Int(written + final)
                return true
            }
        }
        guard ok, total > plaintext.count, total % blockByteCount == 0 else {
            throw CryptoError(.libraryFailure, "AES-CBC encryption failed")
        }
        return Array(out.prefix(total))
    }

    /// Decrypts `ciphertext` and removes its PKCS#7 padding.
    ///
    /// - Returns: The plaintext in wiped-on-release storage (it is card data in MDES payloads).
    /// - Throws: ``CryptoError/Code/invalidLength`` for a wrong key or IV size or a ciphertext
    ///   that is empty or not whole blocks; ``CryptoError/Code/authenticationFailed`` when the
    ///   padding is wrong (wrong key or IV, altered data).
    public static func decrypt(_ ciphertext: [UInt8], using key: SymmetricKey, iv: [UInt8]) throws -> SecureBytes {
        let cipher = try checkSizes(key: key, iv: iv, count: ciphertext.count)
        guard !ciphertext.isEmpty, ciphertext.count % blockByteCount == 0 else {
            throw CryptoError(.invalidLength, "AES-CBC ciphertext of \(ciphertext.count) bytes is not whole blocks")
        }
        guard let context = EVP_CIPHER_CTX_new() else {
            throw CryptoError(.libraryFailure, "EVP_CIPHER_CTX_new failed")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        var total = 0
        let buffer = try SecureBytes(count: ciphertext.count + blockByteCount) { output in
            let out = output.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let ok = key.withUnsafeBytes { keyBytes -> Bool in
                guard
                    EVP_DecryptInit_ex2(
                        context, cipher, keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), iv, nil) == 1
                else { return false }
                var written: Int32 = 0
                guard EVP_DecryptUpdate(context, out, &written, ciphertext, Int32(ciphertext.count)) == 1 else {
                    return false
                }
                var final: Int32 = 0
                guard EVP_DecryptFinal_ex(context, out + Int(written), &final) == 1 else { return false }
                total = Int(written + final)
                return true
            }
            guard ok else { throw CryptoError(.authenticationFailed, "AES-CBC padding check failed") }
        }
        return buffer.withUnsafeBytes { SecureBytes($0.prefix(total)) }
    }

    private static func checkSizes(key: SymmetricKey, iv: [UInt8], count: Int) throws -> OpaquePointer {
        guard iv.count == blockByteCount else {
            throw CryptoError(.invalidLength, "AES-CBC IV must be 16 bytes, got \(iv.count)")
        }
        guard count <= maximumByteCount else {
            throw CryptoError(.invalidLength, "message of \(count) bytes is too large")
        }
        switch key.byteCount {
        case 16: return Algorithms.shared.aes128CBC
        case 32: return Algorithms.shared.aes256CBC
        default: throw CryptoError(.invalidLength, "AES-CBC needs a 16- or 32-byte key, got \(key.byteCount)")
        }
    }
}
