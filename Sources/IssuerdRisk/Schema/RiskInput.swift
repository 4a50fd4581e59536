import Foundation

/// Everything the rules may read about one add-card request, as a typed record.
///
/// Every field is optional: nil is an explicit *unknown*, never false or zero. Durations are
/// seconds. The velocity values (attempts per card, failed one-time codes, …) are not here:
/// they come from a ``VelocityProvider`` in one batch per request.
public struct RiskInput: Sendable, Equatable {
    // request
    /// `request.channel`.
    public var channel: RequestChannel?
    /// `request.source`: where the card number came from.
    public var source: TokenizationSource?
    /// `request.token_requestor_id`.
    public var tokenRequestorID: String?
    /// The request time; `request.hour_utc` and `request.weekday_utc` derive from it.
    public var time: Date?
    /// `request.cvv_result` (TSP-originated manual or camera adds only).
    public var cvvResult: CVVResult?
    /// `request.token_type`: MDES's `tokenType` as sent (`EMBEDDED_SE`, `CLOUD`, `STATIC`, …).
    public var tokenType: String?
    /// `request.wallet_id`: MDES's `walletId` (wallet providers only).
    public var walletID: String?

    // wallet (Apple) and network
    /// `wallet.device_score`, 1 (risky) to 5.
    public var walletDeviceScore: Double?
    /// `wallet.account_score`, 1 (risky) to 5.
    public var walletAccountScore: Double?
    /// `wallet.phone_score`, 1 (risky) to 5.
    public var walletPhoneScore: Double?
    /// `wallet.recommendation`.
    public var walletRecommendation: WalletRecommendation?
    /// `wallet.reason_codes`, by name (see docs/rules.md for the Apple code table).
    public var walletReasonCodes: [String]?
    /// `wallet.token_risk_score`: the network's token risk score, 1 (low) to 99.
    public var networkTokenRiskScore: Double?
    /// `wallet.account_id_hash`: MDES's `accountIdHash` (SHA-256 of the wallet account id), hex as sent.
    public var walletAccountIDHash: String?
    /// `wallet.account_lifetime`: MDES's `accountLifeTime` as a number.
    public var walletAccountLifetime: Double?

    // device
    /// `device.id`.
    public var deviceID: String?
    /// `device.type`.
    public var deviceType: DeviceType?
    /// `device.locale`, e.g. `en_US`.
    public var deviceLocale: String?
    /// `device.locale_country`, e.g. `US`.
    public var deviceLocaleCountry: String?
    /// `device.ip_country`, ISO 3166-1 alpha-2.
    public var deviceIPCountry: String?
    /// `device.active_tokens`: active tokens already on the device.
    public var deviceActiveTokens: Double?
    /// `device.form_factor`: MDES's `formFactor` as sent (`PHONE`, `WATCH`, …).
    public var deviceFormFactor: String?
    /// `device.os_name`: MDES's `osName` as sent (`ANDROID`, `IOS`, …).
    public var deviceOSName: String?
    /// `device.storage_technology`: MDES's `storageTechnology` as sent (`TEE`, `SE`, …).
    public var deviceStorageTechnology: String?

    // card
    /// `card.status`.
    public var cardStatus: CardStatus?
    /// `card.network`.
    public var cardNetwork: CardNetwork?
    /// `card.age`, seconds since the card was issued.
    public var cardAge: Double?
    /// `card.country`, ISO 3166-1 alpha-2.
    public var cardCountry: String?
    /// `card.active_tokens`: active tokens of this card in any wallet.
    public var cardActiveTokens: Double?

    // customer
    /// `customer.age`, seconds since the customer relationship began.
    public var customerAge: Double?
    /// `customer.since_phone_change`, seconds.
    public var sincePhoneChange: Double?
    /// `customer.since_email_change`, seconds.
    public var sinceEmailChange: Double?
    /// `customer.since_address_change`, seconds.
    public var sinceAddressChange: Double?
    /// `customer.name_match_score`: wallet cardholder name against the name on file, 0–100.
    public var nameMatchScore: Double?
    /// `customer.phone_last4_match`: the wallet's phone last four digits match the phone on file.
    public var phoneLast4Match: Bool?

    /// An input in which every attribute is unknown.
    public init() {}
}
