/// The pass-data encryption scheme, as PassKit's `PKEncryptionScheme` names it.
public enum EncryptionScheme: String, Sendable, CaseIterable {
    /// `ECC_V2`: mandatory, iOS 9 and later.
    case eccV2 = "ECC_V2"
    /// `RSA_V2`: only where Apple grants it.
    case rsaV2 = "RSA_V2"
}

/// Where the add-card request started, for issuer risk.
public enum ProvisioningChannel: String, Sendable, CaseIterable {
    /// The "Add to Apple Wallet" button in the issuer app.
    case inApp = "in_app"
    /// Wallet's "add card" list, through the issuer's Wallet Extension (iOS 14+).
    case walletExtension = "wallet_extension"
}
