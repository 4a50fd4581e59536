/// `GET /v1/cards`: the issuer app's cards, with what `PKAddPaymentPassRequestConfiguration`
/// and a Wallet Extension pass entry need.
public struct CardList: Codable, Sendable, Equatable {
    public var cards: [CardSummary]
    public init(cards: [CardSummary]) { self.cards = cards }
}

/// One card as the issuer app sees it. Never carries the PAN.
public struct CardSummary: Codable, Sendable, Equatable {
    public var cardId: String
    public var cardholderName: String
    /// The last four digits.
    public var primaryAccountSuffix: String
    public var localizedDescription: String
    /// `visa`, `mastercard`, `amex`, …
    public var paymentNetwork: String
    /// Identifies the card's passes in `PKPassLibrary` (so the app can hide "Add to Apple Wallet").
    public var primaryAccountIdentifier: String
    /// `active`, `lost`, `stolen`, `blocked` or `closed`.
    public var status: String
    /// Whether the card may be added to Wallet now.
    public var walletEligible: Bool

    public init(
        cardId: String, cardholderName: String, primaryAccountSuffix: String, localizedDescription: String,
        paymentNetwork: String, primaryAccountIdentifier: String, status: String, walletEligible: Bool
    ) {
        self.cardId = cardId
        self.cardholderName = cardholderName
        self.primaryAccountSuffix = primaryAccountSuffix
        self.localizedDescription = localizedDescription
        self.paymentNetwork = paymentNetwork
        self.primaryAccountIdentifier = primaryAccountIdentifier
        self.status = status
        self.walletEligible = walletEligible
    }
}
