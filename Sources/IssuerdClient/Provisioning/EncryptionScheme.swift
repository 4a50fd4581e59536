/// The pass-data encryption scheme, as PassKit's `PKEncryptionScheme` names it.
public enum EncryptionScheme: String, Sendable, CaseIterable {
    /// `ECC_V2`: mandatory, iOS 9 and later.
    case eccV2 = "ECC_V2"
    /// `RSA_V2`: only where Apple grants it.
    case rsaV2 = "RSA_V2"
}
