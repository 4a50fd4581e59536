import COpenSSL

/// RSA keys, separated by purpose: ``Signing`` (PKCS#1 v1.5 with SHA-256: Mastercard TAV, RS256)
/// and ``Encryption`` (OAEP with SHA-256: RSA_V2 `wrappedKey`).
public enum RSA {
    /// PKCS#1 v1.5 SHA-256 signature keys.
    public enum Signing {}
    /// RSA-OAEP keys.
    public enum Encryption {}

    /// The smallest modulus accepted anywhere (NIST SP 800-131A).
    public static let minimumKeyBits = 2048

    static func generate(bits: Int) throws -> PKeyHandle {
        guard (minimumKeyBits...8192).contains(bits) else {
            throw CryptoError(.invalidKey, "RSA key size \(bits) outside 2048...8192")
        }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else {
            throw CryptoError(.libraryFailure, "no RSA key context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else { throw CryptoError(.libraryFailure, "RSA key generation failed") }
        return PKeyHandle(taking: key)
    }

    static func importPrivate(pem: String) throws -> PKeyHandle {
        let handle = try KeyCoding.privateKey(pem: pem)
        try KeyCoding.requireRSA(handle)
        return handle
    }

    static func importPublic(pem: String) throws -> PKeyHandle {
        let handle = try KeyCoding.publicKey(pem: pem)
        try KeyCoding.requireRSA(handle)
        return handle
    }
}

extension RSA.Signing {
    /// An RSA private key that signs with PKCS#1 v1.5 and SHA-256. Prints nothing secret.
    public struct PrivateKey: Sendable, CustomStringConvertible {
        let handle: PKeyHandle

        /// Generates a key of `bits` (2048 to 8192).
        public init(bits: Int = 2048) throws { handle = try RSA.generate(bits: bits) }

        /// Imports a PEM private key (`PRIVATE KEY` or `RSA PRIVATE KEY`).
        ///
        /// - Throws: ``CryptoError/Code/invalidKey`` unless it is RSA of at least 2048 bits.
        public init(pemRepresentation: String) throws { handle = try RSA.importPrivate(pem: pemRepresentation) }

        /// The matching public key.
        public var publicKey: PublicKey { PublicKey(handle: handle) }
        /// The PKCS#8 PEM form.
        public var pemRepresentation: String { (try? KeyCoding.privateKeyPEM(handle)) ?? "" }
        /// The modulus size.
        public var keySizeInBits: Int { handle.bits }

        /// Signs `message` (RSASSA-PKCS1-v1_5 with SHA-256, RFC 8017 §8.2).
        public func signature(for message: [UInt8]) throws -> [UInt8] {
            try DigestSignature.sign(message, with: handle)
        }

        public var description: String { "RSA.Signing.PrivateKey(\(handle.bits) bits, ****)" }
    }

    /// An RSA public key that verifies PKCS#1 v1.5 SHA-256 signatures.
    public struct PublicKey: Sendable {
        let handle: PKeyHandle

        init(handle: PKeyHandle) { self.handle = handle }

        /// Imports a PEM `PUBLIC KEY`.
        public init(pemRepresentation: String) throws { handle = try RSA.importPublic(pem: pemRepresentation) }

        /// The PEM `PUBLIC KEY` form.
        public var pemRepresentation: String { (try? KeyCoding.publicKeyPEM(handle)) ?? "" }

        /// Checks a signature over `message`.
        public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
            DigestSignature.verify(signature, message: message, with: handle)
        }
    }
}

extension RSA.Encryption {
    /// An RSA public key that wraps keys with OAEP (SHA-256, MGF1-SHA-256).
    public struct PublicKey: Sendable {
        let handle: PKeyHandle

        init(handle: PKeyHandle) { self.handle = handle }

        /// Imports a PEM `PUBLIC KEY`.
        public init(pemRepresentation: String) throws { handle = try RSA.importPublic(pem: pemRepresentation) }

        /// The PEM `PUBLIC KEY` form.
        public var pemRepresentation: String { (try? KeyCoding.publicKeyPEM(handle)) ?? "" }
        /// The modulus size.
        public var keySizeInBits: Int { handle.bits }
    }

    /// An RSA private key that unwraps OAEP-wrapped keys. Prints nothing secret.
    public struct PrivateKey: Sendable, CustomStringConvertible {
        let handle: PKeyHandle

        /// Generates a key of `bits`.
        public init(bits: Int = 2048) throws { handle = try RSA.generate(bits: bits) }

        /// Imports a PEM private key.
        public init(pemRepresentation: String) throws { handle = try RSA.importPrivate(pem: pemRepresentation) }

        /// The matching public key.
        public var publicKey: PublicKey { PublicKey(handle: handle) }
        /// The PKCS#8 PEM form.
        public var pemRepresentation: String { (try? KeyCoding.privateKeyPEM(handle)) ?? "" }

        public var description: String { "RSA.Encryption.PrivateKey(\(handle.bits) bits, ****)" }
    }
}
