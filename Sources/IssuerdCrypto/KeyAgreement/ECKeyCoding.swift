import COpenSSL

/// Raw P-256 key import and export without the encoder/decoder framework.
///
/// `i2d_PUBKEY`/`d2i_PUBKEY` cost ~120 µs each (more than an ECDH), so points travel as raw
/// octets through `encoded-pub-key` and `EVP_PKEY_fromdata` (platform notes).
enum ECKeyCoding {
    private static let groupName: StaticString = "prime256v1"

    /// Imports an uncompressed point and checks that it is on the curve.
    static func publicKey(x963 bytes: [UInt8]) throws -> PKeyHandle {
        guard bytes.count == P256.x963ByteCount, bytes.first == 0x04 else {
            throw CryptoError(.invalidKey, "a P-256 public key is 65 bytes starting with 04, got \(bytes.count) bytes")
        }
        let handle = try fromData(selection: publicKeySelection, x963: bytes, scalar: nil)
        try checkPublic(handle)
        return handle
    }

    /// Imports a private scalar, computing its public point so the key can be exported.
    static func privateKey(scalar: [UInt8]) throws -> PKeyHandle {
        guard scalar.count == P256.scalarByteCount else {
            throw CryptoError(.invalidKey, "a P-256 private key is 32 bytes")
        }
        let point = try publicPoint(forScalar: scalar)
        return try fromData(selection: keyPairSelection, x963: point, scalar: scalar)
    }

    /// Generates a fresh P-256 key pair (~15 µs).
    static func generate() throws -> PKeyHandle {
        // The shared template is only read; EVP_PKEY_CTX_new_from_pkey takes its own reference.
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, Algorithms.shared.p256Template, nil) else {
            throw CryptoError(.libraryFailure, "no P-256 key context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_generate(context, &key) == 1, let key else {
            throw CryptoError(.libraryFailure, "P-256 key generation failed")
        }
        return PKeyHandle(taking: key)
    }

    /// Generates a key pair on another named curve (the development root uses P-384).
    static func generate(curve: StaticString) throws -> PKeyHandle {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw CryptoError(.libraryFailure, "no EC key context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
            curve.withUTF8Buffer({ name in
                name.withMemoryRebound(to: CChar.self) { EVP_PKEY_CTX_set_group_name(context, $0.baseAddress) }
            }) == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else { throw CryptoError(.libraryFailure, "P-256 key generation failed") }
        return PKeyHandle(taking: key)
    }

    /// The uncompressed public point of an EC key.
    static func x963(of handle: PKeyHandle) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: P256.x963ByteCount)
        var length = 0
        let status = EVP_PKEY_get_octet_string_param(
            handle.pointer, ParamName.encodedPublicKey.pointer, &out, out.count, &length)
        guard status == 1, length == P256.x963ByteCount, out[0] == 0x04 else {
            throw CryptoError(.invalidKey, "could not export the P-256 public point")
        }
        return out
    }

    /// The big-endian private scalar, in wiped-on-release storage.
    static func scalar(of handle: PKeyHandle) throws -> SecureBytes {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(handle.pointer, ParamName.privateKey.pointer, &number) == 1, let number else {
            throw CryptoError(.invalidKey, "not a P-256 private key")
        }
        defer { BN_clear_free(number) }
        return try SecureBytes(count: P256.scalarByteCount) { out in
            guard
                BN_bn2binpad(number, out.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(P256.scalarByteCount))
                    == 32
            else {
                throw CryptoError(.invalidKey, "P-256 scalar does not fit 32 bytes")
            }
        }
    }

    /// `EVP_PKEY_check` of the public half; cheap enough for keys that arrive as bytes.
    static func checkPublic(_ handle: PKeyHandle) throws {
        let context = try handle.makeContext()
        guard EVP_PKEY_public_check(context.pointer) == 1 else {
            throw CryptoError(.invalidKey, "P-256 point is not on the curve")
        }
    }

    // MARK: - Helpers

    /// `EVP_PKEY_PUBLIC_KEY` and `EVP_PKEY_KEYPAIR` are composite macros that do not import:
    /// spelled out from their selection bits.
    private static let publicKeySelection =
        Int32(OSSL_KEYMGMT_SELECT_ALL_PARAMETERS) | Int32(OSSL_KEYMGMT_SELECT_PUBLIC_KEY)
    private static let keyPairSelection = publicKeySelection | Int32(OSSL_KEYMGMT_SELECT_PRIVATE_KEY)

    private static func fromData(selection: Int32, x963: [UInt8], scalar: [UInt8]?) throws -> PKeyHandle {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw CryptoError(.libraryFailure, "no EC key context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_fromdata_init(context) == 1 else {
            throw CryptoError(.libraryFailure, "EVP_PKEY_fromdata_init failed")
        }
        var point = x963
        // OSSL_PARAM BIGNUMs are native-endian; the scalar arrives big-endian.
        var native: [UInt8] = scalar.map { littleEndianScalar($0) } ?? []
        defer { native.withUnsafeMutableBytes { zeroize($0) } }
        var key: OpaquePointer?
        let status = groupName.withUTF8Buffer { group in
            point.withUnsafeMutableBytes { pointBytes in
                native.withUnsafeMutableBufferPointer { scalarBytes in
                    var params = [
                        OSSL_PARAM_construct_utf8_string(
                            ParamName.group.pointer,
                            UnsafeMutableRawPointer(mutating: group.baseAddress!).assumingMemoryBound(to: CChar.self),
                            group.count),
                        OSSL_PARAM_construct_octet_string(
                            ParamName.publicKey.pointer, pointBytes.baseAddress, pointBytes.count),
                    ]
                    if scalar != nil {
                        params.append(
                            OSSL_PARAM_construct_BN(
                                ParamName.privateKey.pointer, scalarBytes.baseAddress, scalarBytes.count))
                    }
                    params.append(OSSL_PARAM_construct_end())
                    return params.withUnsafeMutableBufferPointer {
                        EVP_PKEY_fromdata(context, &key, selection, $0.baseAddress)
                    }
                }
            }
        }
        guard status == 1, let key else { throw CryptoError(.invalidKey, "not a valid P-256 key") }
        return PKeyHandle(taking: key)
    }

    private static func littleEndianScalar(_ bigEndian: [UInt8]) -> [UInt8] {
        #if _endian(little)
        return bigEndian.reversed()
        #else
        return bigEndian
        #endif
    }

    /// Computes `d·G` (fromdata does not derive the public point).
    private static func publicPoint(forScalar scalar: [UInt8]) throws -> [UInt8] {
        let d = try ECScalar(bigEndian: scalar)
        guard BN_is_zero(d.pointer) == 0, BN_cmp(d.pointer, EC_GROUP_get0_order(P256Group.standard)) < 0 else {
            throw CryptoError(.invalidKey, "P-256 private scalar out of range")
        }
        return try P256Group.x963(ofGeneratorTimes: d, context: BNContext())
    }
}
