import COpenSSL

/// RSAES-OAEP (RFC 8017 §7.1) with SHA-256 and MGF1-SHA-256, the padding Apple documents for
/// the merchant `RSA_v1` key wrap and the one RSA_V2 is assumed to use.
public enum RSAOAEP {
    /// Wraps a symmetric key to `publicKey`.
    ///
    /// - Returns: The ciphertext, as long as the modulus.
    /// - Throws: ``CryptoError/Code/invalidLength`` if the key does not fit the modulus.
    public static func wrap(_ key: SymmetricKey, to publicKey: RSA.Encryption.PublicKey) throws -> [UInt8] {
        let context = try publicKey.handle.makeContext()
        guard EVP_PKEY_encrypt_init(context.pointer) == 1 else { throw CryptoError(.invalidKey, "key cannot encrypt") }
        try configure(context)
        return try key.withUnsafeBytes { input in
            var length = 0
            let source = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
            guard EVP_PKEY_encrypt(context.pointer, nil, &length, source, input.count) == 1 else {
                throw CryptoError(.invalidLength, "key does not fit the RSA modulus")
            }
            var out = [UInt8](repeating: 0, count: length)
            guard EVP_PKEY_encrypt(context.pointer, &out, &length, source, input.count) == 1 else {
                throw CryptoError(.invalidLength, "RSA-OAEP encryption failed")
            }
            return Array(out.prefix(length))
        }
    }

    /// Unwraps a key wrapped by ``wrap(_:to:)``.
    ///
    /// - Throws: ``CryptoError/Code/authenticationFailed`` when the padding check fails (wrong
    ///   key or altered ciphertext); ``CryptoError/Code/invalidLength`` for a wrong size.
    public static func unwrap(_ wrapped: [UInt8], with privateKey: RSA.Encryption.PrivateKey) throws -> SymmetricKey {
        guard wrapped.count == (privateKey.handle.bits + 7) / 8 else {
            throw CryptoError(
                .invalidLength, "wrapped key of \(wrapped.count) bytes for a \(privateKey.handle.bits)-bit key")
        }
        let context = try privateKey.handle.makeContext()
        guard EVP_PKEY_decrypt_init(context.pointer) == 1 else { throw CryptoError(.invalidKey, "key cannot decrypt") }
        try configure(context)
        var length = wrapped.count
        let secure = try SecureBytes(count: wrapped.count) { out in
            guard
                EVP_PKEY_decrypt(
                    context.pointer, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, wrapped,
                    wrapped.count) == 1
            else {
                throw CryptoError(.authenticationFailed, "RSA-OAEP unwrap failed")
            }
        }
        guard (1...1024).contains(length) else {
            throw CryptoError(.authenticationFailed, "RSA-OAEP unwrap produced no key")
        }
        return SymmetricKey(secure: secure.withUnsafeBytes { SecureBytes($0.prefix(length)) })
    }

    private static func configure(_ context: PKeyContext) throws {
        guard EVP_PKEY_CTX_set_rsa_padding(context.pointer, RSA_PKCS1_OAEP_PADDING) == 1,
            EVP_PKEY_CTX_set_rsa_oaep_md(context.pointer, Algorithms.shared.sha256) == 1,
            EVP_PKEY_CTX_set_rsa_mgf1_md(context.pointer, Algorithms.shared.sha256) == 1
        else { throw CryptoError(.invalidKey, "RSA-OAEP parameters rejected") }
    }
}
