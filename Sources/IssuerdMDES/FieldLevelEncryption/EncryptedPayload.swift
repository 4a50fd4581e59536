/// Mastercard's field-level-encryption envelope (`EncryptedPayloadIn`, `EncryptedPayloadOut`,
/// `encryptedPayloadSchemaForNTU`; MDES Pre-Digitization API): hex texts, decoded as sent, checked when
/// opened. Unknown keys in the JSON are ignored.
public struct EncryptedPayload: Codable, Sendable, Equatable {
    /// AES-CBC ciphertext of the UTF-8 JSON plaintext, hex (either case), at most 256 KiB of text.
    public var encryptedData: String
    /// The one-time AES key wrapped with the recipient's RSA public key, hex, 32–512 characters.
    public var encryptedKey: String
    /// Names the RSA key that wrapped `encryptedKey`, hex, 32–64 characters.
    public var publicKeyFingerprint: String
    /// `SHA256` or `SHA512` for RSA-OAEP with that hash (MGF1 the same); absent means PKCS#1 v1.5.
    public var oaepHashingAlgorithm: String?
    /// The AES-CBC IV, hex, exactly 32 characters; absent means 16 zero bytes.
    public var iv: String?

    /// Creates an envelope from its wire fields.
    public init(
        encryptedData: String, encryptedKey: String, publicKeyFingerprint: String, oaepHashingAlgorithm: String?,
        iv: String?
    ) {
        self.encryptedData = encryptedData
        self.encryptedKey = encryptedKey
        self.publicKeyFingerprint = publicKeyFingerprint
        self.oaepHashingAlgorithm = oaepHashingAlgorithm
        self.iv = iv
    }

    /// The longest `encryptedData` text accepted (256 KiB, the schema's limit).
    public static let maximumEncryptedDataLength = 256 * 1024
    /// The `encryptedKey` text's length range (the schema's; a 2048-bit modulus is 512 characters).
    public static let encryptedKeyLengths = 32...512
    /// The `publicKeyFingerprint` text's length range (SHA-1 is 40, SHA-256 is 64).
    public static let fingerprintLengths = 32...64
    /// The `iv` text's length.
    public static let ivLength = 32
}
