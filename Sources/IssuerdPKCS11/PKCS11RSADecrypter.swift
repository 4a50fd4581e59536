import CPKCS11

/// RSA decryption (`CKM_RSA_PKCS_OAEP` with SHA-256 or SHA-512 and MGF1 the same hash, or
/// `CKM_RSA_PKCS`) by a private key that never leaves the token: an MDES issuer encryption key,
/// which unwraps the one-time AES key of an inbound `encryptedPayload`. Checked once at creation:
/// RSA, ≥ 2048 bits, allowed to decrypt, sensitive, not extractable.
public struct PKCS11RSADecrypter: Sendable {
    /// The padding of the wrapped value.
    public enum Padding: Sendable {
        case oaepSHA256, oaepSHA512, pkcs1v15
    }

    /// The token holding the key.
    public let token: PKCS11Token
    /// The key label.
    public let label: String
    /// The modulus size in bits.
    public let bits: Int

    /// Finds and checks the private key labelled `label`.
    ///
    /// - Throws: ``PKCS11Error/Code/keyNotFound``, ``PKCS11Error/Code/keyWrongType`` (not RSA,
    ///   under 2048 bits, no CKA_DECRYPT) or ``PKCS11Error/Code/keyExtractable``.
    public init(token: PKCS11Token, label: String) throws {
        self.token = token
        self.label = label
        bits = try token.checkedRSAPrivateKeyBits(label: label, role: "issuer key", usage: "decrypt")
    }

    /// The plaintext of `ciphertext` (a wrapped AES key: at most the modulus' size less padding).
    ///
    /// - Throws: ``PKCS11Error`` (`C_Decrypt` refuses a padding error like any other failure).
    public func decrypt(_ ciphertext: [UInt8], padding: Padding) throws -> [UInt8] {
        try token.withSession { session in
            let key = try token.handle(label: label, objectClass: UInt(CKO_PRIVATE_KEY), session: session)
            var parameters = CK_RSA_PKCS_OAEP_PARAMS()
            parameters.hashAlg = numericCast(padding == .oaepSHA512 ? CKM_SHA512 : CKM_SHA256)
            parameters.mgf = numericCast(padding == .oaepSHA512 ? CKG_MGF1_SHA512 : CKG_MGF1_SHA256)
            parameters.source = numericCast(CKZ_DATA_SPECIFIED)
            return try withUnsafeMutableBytes(of: &parameters) { raw in
                var mechanism =
                    padding == .pkcs1v15
                    ? CK_MECHANISM(mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS), pParameter: nil, ulParameterLen: 0)
                    : CK_MECHANISM(
                        mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS_OAEP), pParameter: raw.baseAddress,
                        ulParameterLen: CK_ULONG(raw.count))
                try session.check("C_DecryptInit", session.functions.C_DecryptInit!(session.handle, &mechanism, key))
                var plaintext = [UInt8](repeating: 0, count: (bits + 7) / 8)
                var length = CK_ULONG(plaintext.count)
                var input = ciphertext
                try session.check(
                    "C_Decrypt",
                    session.functions.C_Decrypt!(session.handle, &input, CK_ULONG(input.count), &plaintext, &length))
                let result = Array(plaintext.prefix(Int(length)))
                for index in plaintext.indices { plaintext[index] = 0 }
                return result
            }
        }
    }
}
