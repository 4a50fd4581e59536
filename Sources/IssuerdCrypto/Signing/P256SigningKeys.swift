extension P256.Signing {
    /// A P-256 ECDSA private key (ES256, development certificates). Prints nothing secret.
    public struct PrivateKey: Sendable, CustomStringConvertible {
        let handle: PKeyHandle

        /// Generates a fresh key.
        public init() throws { handle = try ECKeyCoding.generate() }

        /// Imports a 32-byte big-endian private scalar.
        public init(rawRepresentation: [UInt8]) throws {
            handle = try ECKeyCoding.privateKey(scalar: rawRepresentation)
        }

        /// Imports a PEM private key (PKCS#8 or SEC1).
        ///
        /// - Throws: ``CryptoError/Code/invalidKey`` unless it is a P-256 private key.
        public init(pemRepresentation: String) throws {
            let handle = try KeyCoding.privateKey(pem: pemRepresentation)
            try KeyCoding.requireP256(handle)
            self.handle = handle
        }

        /// The matching public key.
        public var publicKey: PublicKey { PublicKey(handle: handle) }

        /// The PKCS#8 PEM form.
        public var pemRepresentation: String { (try? KeyCoding.privateKeyPEM(handle)) ?? "" }

        /// Signs `message` with ECDSA over SHA-256 (randomised nonce, as OpenSSL does).
        public func signature(for message: [UInt8]) throws -> ECDSASignature {
            try ECDSASignature(derRepresentation: DigestSignature.sign(message, with: handle))
        }

        public var description: String { "P256.Signing.PrivateKey(****)" }
    }

    /// A P-256 ECDSA public key (verifies ES256 JWTs).
    public struct PublicKey: Sendable {
        let handle: PKeyHandle

        init(handle: PKeyHandle) { self.handle = handle }

        /// Imports an uncompressed point `04 ‖ X ‖ Y`.
        public init(x963Representation: [UInt8]) throws { handle = try ECKeyCoding.publicKey(x963: x963Representation) }

        /// Imports a PEM `PUBLIC KEY`.
        ///
        /// - Throws: ``CryptoError/Code/invalidKey`` unless it is a valid P-256 key.
        public init(pemRepresentation: String) throws {
            let handle = try KeyCoding.publicKey(pem: pemRepresentation)
            try KeyCoding.requireP256(handle)
            try ECKeyCoding.checkPublic(handle)
            self.handle = handle
        }

        /// Imports a DER SubjectPublicKeyInfo.
        public init(derRepresentation: [UInt8]) throws {
            let handle = try KeyCoding.publicKey(der: derRepresentation)
            try KeyCoding.requireP256(handle)
            try ECKeyCoding.checkPublic(handle)
            self.handle = handle
        }

        /// The uncompressed point.
        public var x963Representation: [UInt8] { (try? ECKeyCoding.x963(of: handle)) ?? [] }

        /// The PEM `PUBLIC KEY` form.
        public var pemRepresentation: String { (try? KeyCoding.publicKeyPEM(handle)) ?? "" }

        /// Checks an ECDSA/SHA-256 signature over `message`.
        public func isValidSignature(_ signature: ECDSASignature, for message: [UInt8]) -> Bool {
            DigestSignature.verify(signature.derRepresentation, message: message, with: handle)
        }
    }
}
