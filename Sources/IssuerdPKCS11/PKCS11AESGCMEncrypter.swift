import CPKCS11

/// AES-256-GCM encryption (`CKM_AES_GCM`, a 12-byte IV and a 16-byte tag) by a secret key that
/// never leaves the token: the key-encryption key of Visa's encrypted payment instrument, which
/// wraps each JWE content key. Checked once at creation: AES-256, allowed to encrypt,
/// sensitive, not extractable.
public struct PKCS11AESGCMEncrypter: Sendable {
    /// The token holding the key.
    public let token: PKCS11Token
    /// The key label.
    public let label: String

    /// The IV length this type sends (GCM's default).
    public static let ivByteCount = 12
    /// The tag length this type asks for.
    public static let tagByteCount = 16
    /// The largest plaintext accepted: a content key or a small message, never bulk data.
    public static let maximumPlaintextByteCount = 4096

    /// Finds and checks the secret key labelled `label`.
    ///
    /// - Throws: ``PKCS11Error/Code/keyNotFound``, ``PKCS11Error/Code/keyWrongType`` (not AES-256,
    ///   no CKA_ENCRYPT) or ``PKCS11Error/Code/keyExtractable``.
    public init(token: PKCS11Token, label: String) throws {
        self.token = token
        self.label = label
        try token.withSession { session in
            let key = try token.handle(label: label, objectClass: UInt(CKO_SECRET_KEY), session: session)
            let info = try PKCS11ObjectInfo.read(key, session: session)
            guard info.keyType == "AES", info.bits == 256 else {
                throw PKCS11Error(
                    .keyWrongType,
                    "the key '\(label)' is \(info.keyType ?? "untyped") \(info.bits.map { "\($0)-bit" } ?? ""), not AES-256"
                )
            }
            guard info.usage.contains("encrypt") else {
                throw PKCS11Error(.keyWrongType, "the key '\(label)' does not allow CKA_ENCRYPT")
            }
            try PKCS11Token.requireNonExtractable(info, role: "key")
        }
    }

    /// Encrypts and authenticates `plaintext` in the token.
    ///
    /// - Parameters:
    ///   - plaintext: At most ``maximumPlaintextByteCount`` bytes.
    ///   - iv: ``ivByteCount`` bytes, never reused with this key (the caller draws them).
    ///   - authenticatedData: Bound to the ciphertext, not encrypted.
    /// - Returns: `ciphertext ‖ tag`, as OpenSSL's AES-256-GCM lays it out.
    /// - Throws: ``PKCS11Error/Code/invalidInput`` for sizes; ``PKCS11Error`` naming the Cryptoki failure.
    public func seal(
        _ plaintext: [UInt8], iv: [UInt8], authenticating authenticatedData: [UInt8] = []
    ) throws
        -> [UInt8]
    {
        guard iv.count == Self.ivByteCount, plaintext.count <= Self.maximumPlaintextByteCount,
            authenticatedData.count <= Self.maximumPlaintextByteCount
        else {
            throw PKCS11Error(
                .invalidInput,
                "AES-GCM takes a \(Self.ivByteCount)-byte IV and at most \(Self.maximumPlaintextByteCount) bytes")
        }
        return try token.withSession { session in
            let key = try token.handle(label: label, objectClass: UInt(CKO_SECRET_KEY), session: session)
            var ivBytes = iv
            var aad = authenticatedData
            var input = plaintext
            defer { for index in input.indices { input[index] = 0 } }
            var output = [UInt8](repeating: 0, count: plaintext.count + Self.tagByteCount)
            var length = CK_ULONG(output.count)
            try ivBytes.withUnsafeMutableBufferPointer { ivPointer in
                try aad.withUnsafeMutableBufferPointer { aadPointer in
                    var parameters = CK_GCM_PARAMS()
                    parameters.pIv = ivPointer.baseAddress
                    parameters.ulIvLen = CK_ULONG(ivPointer.count)
                    parameters.ulIvBits = CK_ULONG(ivPointer.count * 8)
                    parameters.pAAD = aadPointer.count == 0 ? nil : aadPointer.baseAddress
                    parameters.ulAADLen = CK_ULONG(aadPointer.count)
                    parameters.ulTagBits = CK_ULONG(Self.tagByteCount * 8)
                    try withUnsafeMutableBytes(of: &parameters) { raw in
                        var mechanism = CK_MECHANISM(
                            mechanism: CK_MECHANISM_TYPE(CKM_AES_GCM), pParameter: raw.baseAddress,
                            ulParameterLen: CK_ULONG(raw.count))
                        try session.check(
                            "C_EncryptInit", session.functions.C_EncryptInit!(session.handle, &mechanism, key))
                        try session.check(
                            "C_Encrypt",
                            session.functions.C_Encrypt!(
                                session.handle, &input, CK_ULONG(input.count), &output, &length))
                    }
                }
            }
            guard Int(length) == plaintext.count + Self.tagByteCount else {
                throw PKCS11Error(
                    .operationFailed,
                    "C_Encrypt returned \(length) bytes, expected \(plaintext.count + Self.tagByteCount)")
            }
            return output
        }
    }
}
