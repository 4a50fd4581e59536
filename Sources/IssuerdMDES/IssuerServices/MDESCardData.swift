import IssuerdCrypto

/// A decrypted `encryptedPayload` whose bounds were checked and whose card account is there:
/// only ``MDESFundingAccountData/checkedCard()`` makes one, so holding one is the proof (as
/// ``ValidatedAppleChain`` is the proof of a verified chain). Holds card data: never logged,
/// never stored.
public struct MDESCardData: Sendable {
    /// The card account (its number 9 to 19 digits; expiry and security code digits when sent).
    public let account: MDESFundingAccountData.CardAccountData
    /// Where the wallet took the card number from.
    public let source: MDESFundingSource?

    fileprivate init(account: MDESFundingAccountData.CardAccountData, source: MDESFundingSource?) {
        self.account = account
        self.source = source
    }

    /// The card's expiry as sent: nil when the payload has none (MDES allows it), `.some(nil)`
    /// when its two-digit month and year are no expiry (month 13): it then matches no card.
    public var expiration: CardExpiration?? {
        guard let month = account.expiryMonth, let year = account.expiryYear else { return nil }
        guard let month = Int(month), let year = Int(year) else { return .some(nil) }
        return .some(CardExpiration(month: month, year: year))
    }
}

/// Card data with its token (Notify Service Activated): the token is there.
public struct MDESTokenizedCardData: Sendable {
    public let card: MDESCardData
    public let token: MDESFundingAccountData.TokenData

    fileprivate init(card: MDESCardData, token: MDESFundingAccountData.TokenData) {
        self.card = card
        self.token = token
    }
}

extension MDESFundingAccountData {
    /// The bounds checked (``validate(requireCard:requireToken:)``) and the card account required.
    ///
    /// - Throws: ``MDESRequestError`` naming the first field out of bounds or missing.
    public func checkedCard() throws -> MDESCardData {
        try validate()
        return try card()
    }

    /// The same with the token required too.
    public func checkedCardAndToken() throws -> MDESTokenizedCardData {
        try validate(requireToken: true)
        guard let token = tokenData else { throw MDESRequestError.invalidField("tokenData", "is required") }
        return MDESTokenizedCardData(card: try card(), token: token)
    }

    private func card() throws -> MDESCardData {
        guard let account = cardAccountData else {
            throw MDESRequestError.invalidField("cardAccountData", "is required")
        }
        return MDESCardData(account: account, source: source)
    }
}
