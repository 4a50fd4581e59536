/// Where the add-card request started, for issuer risk.
public enum ProvisioningChannel: String, Sendable, CaseIterable {
    /// The "Add to Apple Wallet" button in the issuer app.
    case inApp = "in_app"
    /// Wallet's "add card" list, through the issuer's Wallet Extension (iOS 14+).
    case walletExtension = "wallet_extension"
}
