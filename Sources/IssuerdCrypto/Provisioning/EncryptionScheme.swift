/// PassKit's encryption schemes for `encryptedPassData`.
public enum EncryptionScheme: String, Sendable, CaseIterable, Codable {
    /// `EV_ECC_v2`: mandatory, ECDH P-256 + concatenation KDF + AES-256-GCM.
    case eccV2 = "ECC_V2"
    /// `EV_RSA_v2`: only where Apple grants it; our implementation is the unverified merchant analogue.
    case rsaV2 = "RSA_V2"

    /// The constant PassKit uses (`PKEncryptionScheme`).
    public var passKitName: String {
        switch self {
        case .eccV2: "EV_ECC_v2"
        case .rsaV2: "EV_RSA_v2"
        }
    }
}
