import CPKCS11

/// What `keys hsm status` shows about one object: label, class, type, size and the flags a
/// security review asks about. Never a key byte.
public struct PKCS11ObjectInfo: Sendable, Equatable {
    /// `CKA_LABEL`.
    public let label: String
    /// `secret key`, `private key`, `public key`, `certificate`, `data`, …
    public let objectClass: String
    /// `AES`, `RSA`, `EC`, … or nil for objects without a key type.
    public let keyType: String?
    /// AES key bytes × 8, or the RSA modulus bits.
    public let bits: Int?
    /// `CKA_SENSITIVE` (nil for public objects).
    public let sensitive: Bool?
    /// `CKA_EXTRACTABLE` (nil for public objects).
    public let extractable: Bool?
    /// `CKA_NEVER_EXTRACTABLE`: true when the key was never extractable since its creation.
    public let neverExtractable: Bool?
    /// The operations the key allows: `wrap`, `unwrap`, `sign`, `verify`, `encrypt`, `decrypt`.
    public let usage: [String]

    static func className(_ value: UInt) -> String {
        switch value {
        case UInt(CKO_DATA): "data object"
        case UInt(CKO_CERTIFICATE): "certificate"
        case UInt(CKO_PUBLIC_KEY): "public key"
        case UInt(CKO_PRIVATE_KEY): "private key"
        case UInt(CKO_SECRET_KEY): "secret key"
        default: "object of class 0x" + String(value, radix: 16)
        }
    }

    static func keyTypeName(_ value: UInt) -> String {
        switch value {
        case UInt(CKK_RSA): "RSA"
        case UInt(CKK_EC): "EC"
        case UInt(CKK_AES): "AES"
        case UInt(CKK_GENERIC_SECRET): "generic secret"
        case UInt(CKK_DES3): "DES3"
        default: "key type 0x" + String(value, radix: 16)
        }
    }

    /// Reads the attributes of `object` one by one (a missing one is nil, not an error).
    static func read(_ object: CK_OBJECT_HANDLE, session: PKCS11Session) throws -> PKCS11ObjectInfo {
        let objectClass = try session.ulong(CK_ATTRIBUTE_TYPE(CKA_CLASS), of: object) ?? UInt.max
        let keyType = try session.ulong(CK_ATTRIBUTE_TYPE(CKA_KEY_TYPE), of: object)
        var bits: Int?
        if keyType == UInt(CKK_RSA) {
            bits = try session.attribute(CK_ATTRIBUTE_TYPE(CKA_MODULUS), of: object).map { modulusBits($0) }
        } else if let length = try session.ulong(CK_ATTRIBUTE_TYPE(CKA_VALUE_LEN), of: object) {
            bits = Int(length) * 8
        }
        var usage: [String] = []
        for (attribute, name) in [
            (CKA_WRAP, "wrap"), (CKA_UNWRAP, "unwrap"), (CKA_SIGN, "sign"), (CKA_VERIFY, "verify"),
            (CKA_ENCRYPT, "encrypt"), (CKA_DECRYPT, "decrypt"),
        ] {
            if try session.bool(CK_ATTRIBUTE_TYPE(attribute), of: object) == true { usage.append(name) }
        }
        let isPublic = objectClass == UInt(CKO_PUBLIC_KEY)
        return PKCS11ObjectInfo(
            label: try session.text(CK_ATTRIBUTE_TYPE(CKA_LABEL), of: object) ?? "",
            objectClass: className(objectClass),
            keyType: keyType.map(keyTypeName),
            bits: bits,
            sensitive: isPublic ? nil : try session.bool(CK_ATTRIBUTE_TYPE(CKA_SENSITIVE), of: object),
            extractable: isPublic ? nil : try session.bool(CK_ATTRIBUTE_TYPE(CKA_EXTRACTABLE), of: object),
            neverExtractable: isPublic ? nil : try session.bool(CK_ATTRIBUTE_TYPE(CKA_NEVER_EXTRACTABLE), of: object),
            usage: usage)
    }

    static func modulusBits(_ modulus: [UInt8]) -> Int {
        guard let first = modulus.firstIndex(where: { $0 != 0 }) else { return 0 }
        return (modulus.count - first) * 8 - modulus[first].leadingZeroBitCount
    }
}
