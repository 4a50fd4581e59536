import COpenSSL

extension P256.KeyAgreement {
    /// A P-256 private key for ECDH. Prints nothing secret.
    public struct PrivateKey: Sendable, CustomStringConvertible {
        let handle: PKeyHandle

        /// Generates a fresh key pair (~25 µs).
        ///
        /// - Throws: ``CryptoError/Code/libraryFailure`` if OpenSSL cannot generate a key.
        public init() throws { handle = try ECKeyCoding.generate() }

        /// Imports a 32-byte big-endian private scalar.
        ///
        /// - Throws: ``CryptoError/Code/invalidKey`` for a scalar of the wrong size or out of range.
        public init(rawRepresentation: [UInt8]) throws {
            handle = try ECKeyCoding.privateKey(scalar: rawRepresentation)
        }

        /// Imports a PEM private key (`PRIVATE KEY` PKCS#8 or `EC PRIVATE KEY` SEC1).
        ///
        /// - Throws: ``CryptoError/Code/invalidKey`` unless it is a P-256 private key.
        public init(pemRepresentation: String) throws {
            let handle = try KeyCoding.privateKey(pem: pemRepresentation)
            try KeyCoding.requireP256(handle)
            self.handle = handle
        }

        /// The matching public key.
        public var publicKey: PublicKey { PublicKey(validated: handle) }

        /// The PKCS#8 PEM form, for development files only.
        public var pemRepresentation: String { (try? KeyCoding.privateKeyPEM(handle)) ?? "" }

        /// Runs ECDH with `peer` (~49 µs).
        ///
        /// The peer was validated when its ``PublicKey`` was made, so the derivation uses
        /// `EVP_PKEY_derive_set_peer_ex(…, 0)` instead of re-validating (which doubles the cost).
        /// - Returns: Z, the 32-byte big-endian x-coordinate.
        /// - Throws: ``CryptoError`` when OpenSSL rejects the pair.
        public func sharedSecretFromKeyAgreement(with peer: PublicKey) throws -> SharedSecret {
            let context = try handle.makeContext()
            guard EVP_PKEY_derive_init(context.pointer) == 1,
                EVP_PKEY_derive_set_peer_ex(context.pointer, peer.handle.pointer, 0) == 1
            else {
                throw CryptoError(.invalidKey, "ECDH peer key rejected")
            }
            var length = 32
            let bytes = try SecureBytes(count: 32) { out in
                guard
                    EVP_PKEY_derive(context.pointer, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
                        == 1, length == 32
                else {
                    throw CryptoError(.libraryFailure, "ECDH derivation failed")
                }
            }
            return SharedSecret(bytes: bytes)
        }

        public var description: String { "P256.KeyAgreement.PrivateKey(****)" }
    }
}
