import COpenSSL

extension RSA.Encryption {
    /// How a symmetric key is wrapped with RSA.
    public enum Padding: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// RSAES-OAEP (RFC 8017 §7.1) with SHA-256, MGF1-SHA-256 and an empty label.
        case oaepSHA256 = "RSA-OAEP-SHA256"
        /// RSAES-OAEP with SHA-512, MGF1-SHA-512 and an empty label.
        case oaepSHA512 = "RSA-OAEP-SHA512"
        /// RSAES-PKCS1-v1_5 (RFC 8017 §7.2): only to open what an older sender wrapped that way.
        case pkcs1v15 = "RSA-PKCS1-v1_5"

        public var description: String { rawValue }
    }
}

/// Anything that unwraps an RSA-wrapped symmetric key: an in-process key
/// (``RSA/Encryption/PrivateKey``) or a key that never leaves an HSM (the service adapts its
/// PKCS#11 decryption to this protocol, `CKM_RSA_PKCS_OAEP` or `CKM_RSA_PKCS` in the token).
public protocol RSAKeyUnwrapping: Sendable {
    /// The modulus size: a wrapped key is exactly `(bits + 7) / 8` bytes.
    var keySizeInBits: Int { get }

    /// The symmetric key inside `wrapped`.
    ///
    /// - Throws: ``CryptoError/Code/authenticationFailed`` when the padding check fails (wrong
    ///   key, wrong padding, altered ciphertext); ``CryptoError/Code/invalidLength`` for a size
    ///   that is not the modulus'.
    func unwrapKey(_ wrapped: [UInt8], padding: RSA.Encryption.Padding) throws -> SymmetricKey
}

extension RSA.Encryption.PrivateKey: RSAKeyUnwrapping {
    /// The modulus size.
    public var keySizeInBits: Int { handle.bits }

    public func unwrapKey(_ wrapped: [UInt8], padding: RSA.Encryption.Padding) throws -> SymmetricKey {
        try RSAKeyWrap.unwrap(wrapped, with: self, padding: padding)
    }
}

/// RSA key transport over `EVP_PKEY_encrypt`/`EVP_PKEY_decrypt`, with the padding named per call.
public enum RSAKeyWrap {
    /// Wraps `key` to `publicKey`.
    ///
    /// - Returns: The ciphertext, as long as the modulus.
    /// - Throws: ``CryptoError/Code/invalidLength`` if the key does not fit the modulus and padding.
    public static func wrap(
        _ key: SymmetricKey, to publicKey: RSA.Encryption.PublicKey, padding: RSA.Encryption.Padding
    ) throws -> [UInt8] {
        let context = try publicKey.handle.makeContext()
        guard EVP_PKEY_encrypt_init(context.pointer) == 1 else { throw CryptoError(.invalidKey, "key cannot encrypt") }
        try configure(context, padding)
        return try key.withUnsafeBytes { input in
            var length = 0
            let source = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
            guard EVP_PKEY_encrypt(context.pointer, nil, &length, source, input.count) == 1 else {
                throw CryptoError(.invalidLength, "key does not fit the RSA modulus")
            }
            var out = [UInt8](repeating: 0, count: length)
            guard EVP_PKEY_encrypt(context.pointer, &out, &length, source, input.count) == 1 else {
                throw CryptoError(.invalidLength, "\(padding) encryption failed")
            }
            return Array(out.prefix(length))
        }
    }

    /// Unwraps a key wrapped by ``wrap(_:to:padding:)`` (or any sender using the same padding).
    ///
    /// OpenSSL 3.0 reports a PKCS#1 v1.5 padding error as an error (3.2 and later answer a
    /// random key instead, "implicit rejection"); either way the caller learns only that the
    /// data does not open, and must tell its peer no more than that.
    ///
    /// - Throws: ``CryptoError/Code/authenticationFailed`` when the padding check fails;
    ///   ``CryptoError/Code/invalidLength`` for a ciphertext that is not the modulus' size.
    public static func unwrap(
        _ wrapped: [UInt8], with privateKey: RSA.Encryption.PrivateKey, padding: RSA.Encryption.Padding
    ) throws -> SymmetricKey {
        let handle = privateKey.handle
        guard wrapped.count == (handle.bits + 7) / 8 else {
            throw CryptoError(.invalidLength, "wrapped key of \(wrapped.count) bytes for a \(handle.bits)-bit key")
        }
        let context = try handle.makeContext()
        guard EVP_PKEY_decrypt_init(context.pointer) == 1 else { throw CryptoError(.invalidKey, "key cannot decrypt") }
        try configure(context, padding)
        var length = wrapped.count
        let secure = try SecureBytes(count: wrapped.count) { out in
            guard
                EVP_PKEY_decrypt(
                    context.pointer, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, wrapped,
                    wrapped.count) == 1
            else {
                throw CryptoError(.authenticationFailed, "\(padding) unwrap failed")
            }
        }
        guard (1...1024).contains(length) else {
            throw CryptoError(.authenticationFailed, "\(padding) unwrap produced no key")
        }
        return SymmetricKey(secure: secure.withUnsafeBytes { SecureBytes($0.prefix(length)) })
    }

    private static func configure(_ context: PKeyContext, _ padding: RSA.Encryption.Padding) throws {
        let ok: Bool
        switch padding {
        case .pkcs1v15:
            ok = EVP_PKEY_CTX_set_rsa_padding(context.pointer, RSA_PKCS1_PADDING) == 1
        case .oaepSHA256, .oaepSHA512:
            // MGF1 uses the OAEP hash, as Java's OAEPWith<hash>AndMGF1Padding and Mastercard's
            // libraries do; OpenSSL would otherwise default MGF1 to the OAEP digest anyway, but
            // it is set explicitly so that a change of default cannot change the wire format.
            let digest = padding == .oaepSHA256 ? Algorithms.shared.sha256 : Algorithms.shared.sha512
            ok =
                EVP_PKEY_CTX_set_rsa_padding(context.pointer, RSA_PKCS1_OAEP_PADDING) == 1
                && EVP_PKEY_CTX_set_rsa_oaep_md(context.pointer, digest) == 1
                && EVP_PKEY_CTX_set_rsa_mgf1_md(context.pointer, digest) == 1
        }
        guard ok else { throw CryptoError(.invalidKey, "\(padding) parameters rejected") }
    }
}
