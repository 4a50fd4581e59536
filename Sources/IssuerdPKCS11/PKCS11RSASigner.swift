import CPKCS11

/// RSASSA-PKCS1-v1_5 with SHA-256 (`CKM_SHA256_RSA_PKCS`) by a private key that never leaves
/// the token: the TAV signing key. Checked once at creation: RSA, ≥ 2048 bits, allowed to
/// sign, sensitive, not extractable.
public struct PKCS11RSASigner: Sendable {
    /// The token holding the key.
    public let token: PKCS11Token
    /// The key label.
    public let label: String
    /// The modulus size in bits.
    public let bits: Int

    /// Finds and checks the private key labelled `label`.
    ///
    /// - Throws: ``PKCS11Error/Code/keyNotFound``, ``PKCS11Error/Code/keyWrongType`` (not RSA,
    ///   under 2048 bits, no CKA_SIGN) or ``PKCS11Error/Code/keyExtractable``.
    public init(token: PKCS11Token, label: String) throws {
        self.token = token
        self.label = label
        bits = try token.checkedRSAPrivateKeyBits(label: label, role: "signing key", usage: "sign")
    }

    /// The signature over `message` (hashed with SHA-256 inside the token).
    ///
    /// - Throws: ``PKCS11Error``; ``PKCS11Error/Code/sessionLost`` when even a fresh session fails.
    public func signature(for message: [UInt8]) throws -> [UInt8] {
        try token.withSession { session in
            let key = try token.handle(label: label, objectClass: UInt(CKO_PRIVATE_KEY), session: session)
            var mechanism = CK_MECHANISM(
                mechanism: CK_MECHANISM_TYPE(CKM_SHA256_RSA_PKCS), pParameter: nil, ulParameterLen: 0)
            try session.check("C_SignInit", session.functions.C_SignInit!(session.handle, &mechanism, key))
            var signature = [UInt8](repeating: 0, count: (bits + 7) / 8)
            var length = CK_ULONG(signature.count)
            var input = message
            try session.check(
                "C_Sign", session.functions.C_Sign!(session.handle, &input, CK_ULONG(input.count), &signature, &length))
            guard Int(length) == signature.count else {
                throw PKCS11Error(.operationFailed, "C_Sign returned \(length) bytes for a \(bits)-bit key")
            }
            return signature
        }
    }
}
