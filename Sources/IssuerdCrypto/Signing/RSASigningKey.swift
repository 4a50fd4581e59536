import COpenSSL

/// Anything that signs with RSASSA-PKCS1-v1_5 and SHA-256: an in-process key
/// (``RSA/Signing/PrivateKey``) or a key that never leaves an HSM (the service adapts its
/// PKCS#11 signer to this protocol). ``MastercardTAVProvider`` signs through it.
public protocol RSASigningKey: Sendable {
    /// The signature over `message` (SHA-256 inside the signer).
    ///
    /// - Throws: the signer's error; never returns a partial or unsigned value.
    func signature(for message: [UInt8]) throws -> [UInt8]
}

extension RSA.Signing.PrivateKey: RSASigningKey {}

extension RSA.Signing.PublicKey {
    /// Builds the public key from its big-endian modulus and exponent, as a PKCS#11 token
    /// reports them (`CKA_MODULUS`, `CKA_PUBLIC_EXPONENT`).
    ///
    /// - Throws: ``CryptoError/Code/invalidKey`` for a modulus under 2048 bits or an empty part.
    public init(modulus: [UInt8], exponent: [UInt8]) throws {
        guard !modulus.isEmpty, !exponent.isEmpty, modulus.count <= 1024, exponent.count <= 16 else {
            throw CryptoError(.invalidKey, "RSA modulus or exponent of unusable length")
        }
        guard let builder = OSSL_PARAM_BLD_new() else {
            throw CryptoError(.libraryFailure, "OSSL_PARAM_BLD_new failed")
        }
        defer { OSSL_PARAM_BLD_free(builder) }
        let n = BN_bin2bn(modulus, Int32(modulus.count), nil)
        let e = BN_bin2bn(exponent, Int32(exponent.count), nil)
        defer {
            BN_free(n)
            BN_free(e)
        }
        guard let n, let e, OSSL_PARAM_BLD_push_BN(builder, ParamName.rsaModulus.pointer, n) == 1,
            OSSL_PARAM_BLD_push_BN(builder, ParamName.rsaExponent.pointer, e) == 1,
            let params = OSSL_PARAM_BLD_to_param(builder)
        else { throw CryptoError(.libraryFailure, "cannot build RSA parameters") }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else {
            throw CryptoError(.libraryFailure, "no RSA key context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1,
            EVP_PKEY_fromdata(
                context, &key, Int32(OSSL_KEYMGMT_SELECT_ALL_PARAMETERS) | Int32(OSSL_KEYMGMT_SELECT_PUBLIC_KEY), params
            ) == 1, let key
        else {
            throw CryptoError(.invalidKey, "not an RSA public key")
        }
        let handle = PKeyHandle(taking: key)
        guard handle.bits >= RSA.minimumKeyBits else {
            throw CryptoError(.invalidKey, "RSA key of \(handle.bits) bits; at least 2048 required")
        }
        self.init(handle: handle)
    }

    /// The modulus size.
    public var keySizeInBits: Int { handle.bits }
}
