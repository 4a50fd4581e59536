extension P256.KeyAgreement {
    /// A P-256 public key for ECDH, always checked to be a valid point on the curve.
    ///
    /// Because every value of this type has been validated once (on import, or by the chain
    /// verifier for a certificate key), ECDH skips OpenSSL's per-call re-validation.
    public struct PublicKey: Sendable {
        let handle: PKeyHandle
        /// ECDH with this key as the recipient, shared by every copy (``P256PeerMultiples``).
        let multiples: P256PeerMultiples

        init(validated handle: PKeyHandle) {
            self.handle = handle
            multiples = P256PeerMultiples(peer: handle)
        }

        /// Imports an uncompressed SEC1 point `04 ‖ X ‖ Y` and checks it lies on P-256.
        ///
        /// - Throws: ``CryptoError/Code/invalidKey``.
        public init(x963Representation: [UInt8]) throws {
            self.init(validated: try ECKeyCoding.publicKey(x963: x963Representation))
        }

        /// Imports a PEM `PUBLIC KEY` (SubjectPublicKeyInfo).
        ///
        /// - Throws: ``CryptoError/Code/invalidKey`` unless it is a valid P-256 key.
        public init(pemRepresentation: String) throws {
            let handle = try KeyCoding.publicKey(pem: pemRepresentation)
            try KeyCoding.requireP256(handle)
            try ECKeyCoding.checkPublic(handle)
            self.init(validated: handle)
        }

        /// The 65-byte uncompressed point, the form ECC_V2 returns as `ephemeralPublicKey`.
        public var x963Representation: [UInt8] {
            // Cannot fail for a key that was imported or generated as P-256.
            (try? ECKeyCoding.x963(of: handle)) ?? []
        }

        /// Builds the table of this key's multiples now instead of on its second seal.
        @_spi(Testing) public func prepareMultiples() throws { try multiples.prepareTable() }

        /// True once seals to this key go through its table of multiples.
        @_spi(Testing) public var sealsThroughTable: Bool { multiples.hasTable }

        /// The PEM `PUBLIC KEY` form.
        public var pemRepresentation: String { (try? KeyCoding.publicKeyPEM(handle)) ?? "" }
    }
}
