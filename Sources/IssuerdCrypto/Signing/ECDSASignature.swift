import COpenSSL

extension P256.Signing {
    /// An ECDSA P-256 signature, convertible between DER (X.509, OpenSSL) and raw `r ‖ s`
    /// (64 bytes, the JWS ES256 form of RFC 7518 §3.4).
    public struct ECDSASignature: Sendable, Equatable {
        /// The raw 64-byte `r ‖ s` form.
        public let rawRepresentation: [UInt8]

        /// Wraps a raw `r ‖ s` signature.
        ///
        /// - Throws: ``CryptoError/Code/invalidSignatureEncoding`` unless it is 64 bytes.
        public init(rawRepresentation: [UInt8]) throws {
            guard rawRepresentation.count == 64 else {
                throw CryptoError(
                    .invalidSignatureEncoding,
                    "raw ECDSA P-256 signature must be 64 bytes, got \(rawRepresentation.count)")
            }
            self.rawRepresentation = rawRepresentation
        }

        /// Parses a DER `ECDSA-Sig-Value` (strict: no trailing bytes, each integer ≤ 32 bytes).
        ///
        /// - Throws: ``CryptoError/Code/invalidSignatureEncoding``.
        public init(derRepresentation: [UInt8]) throws {
            guard (8...72).contains(derRepresentation.count) else {
                throw CryptoError(.invalidSignatureEncoding, "DER ECDSA signature of \(derRepresentation.count) bytes")
            }
            let raw = try derRepresentation.withUnsafeBufferPointer { buffer -> [UInt8] in
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else {
                    throw CryptoError(.invalidSignatureEncoding, "not a DER ECDSA signature")
                }
                defer { ECDSA_SIG_free(signature) }
                guard cursor == buffer.baseAddress! + buffer.count else {
                    throw CryptoError(.invalidSignatureEncoding, "trailing bytes after the DER signature")
                }
                var r: OpaquePointer?
                var s: OpaquePointer?
                ECDSA_SIG_get0(signature, &r, &s)
                var out = [UInt8](repeating: 0, count: 64)
                guard BN_bn2binpad(r, &out, 32) == 32,
                    out.withUnsafeMutableBufferPointer({ BN_bn2binpad(s, $0.baseAddress! + 32, 32) }) == 32
                else { throw CryptoError(.invalidSignatureEncoding, "ECDSA integer larger than 32 bytes") }
                return out
            }
            rawRepresentation = raw
        }

        /// The DER `ECDSA-Sig-Value` form.
        public var derRepresentation: [UInt8] {
            guard let signature = ECDSA_SIG_new() else { return [] }
            defer { ECDSA_SIG_free(signature) }
            let r = rawRepresentation.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
            let s = rawRepresentation.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
            // ECDSA_SIG_set0 takes ownership of both numbers on success only.
            guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
                BN_free(r)
                BN_free(s)
                return []
            }
            var out: UnsafeMutablePointer<UInt8>?
            let length = i2d_ECDSA_SIG(signature, &out)
            guard length > 0, let out else { return [] }
            defer { CRYPTO_free(out, #fileID, #line) }
            return Array(UnsafeBufferPointer(start: out, count: Int(length)))
        }
    }
}
