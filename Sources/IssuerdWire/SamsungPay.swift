/// `POST /v1/cards/{cardId}/samsung-pay/push-provisioning`: what the issuer's Android app sends
/// before it calls the Samsung Pay SDK's `CardManager.addCard`.
public struct SamsungPayPushRequest: Codable, Sendable, Equatable {
    /// `SamsungPay.getWalletInfo()`'s `device_id` and `wallet_user_id`.
    public var walletInfo: SamsungPayWalletInfo?
    /// The device the card is pushed to (`id`, `type`, `locale`, `ipAddress`).
    public var device: DeviceInfo?

    public init(walletInfo: SamsungPayWalletInfo? = nil, device: DeviceInfo? = nil) {
        self.walletInfo = walletInfo
        self.device = device
    }
}

/// The Samsung Pay SDK's wallet information.
public struct SamsungPayWalletInfo: Codable, Sendable, Equatable {
    /// `device_id`.
    public var deviceId: String?
    /// `wallet_user_id`.
    public var walletUserId: String?

    public init(deviceId: String? = nil, walletUserId: String? = nil) {
        self.deviceId = deviceId
        self.walletUserId = walletUserId
    }
}

/// 200 answer to a Samsung Pay push (green or yellow): what the app puts in `AddCardInfo`.
public struct SamsungPayPushResponse: Codable, Sendable, Equatable {
    public var attemptId: String
    public var decision: Decision
    /// The step-up methods a yellow decision allows (absent when green).
    public var stepUpMethods: [String]?
    /// The network's payload (`EXTRA_PROVISION_PAYLOAD`): for Visa the compact JWE of Visa's
    /// encrypted payment instrument, for Mastercard the opaque payment card Google Pay gets too.
    public var provisionPayload: String
    /// `VI` (Visa) or `MI` (Mastercard), `AddCardInfo`'s tokenization provider.
    public var tokenizationProvider: String
    /// `visa` or `mastercard`.
    public var network: String
    /// The card's last four digits.
    public var lastDigits: String
    /// What the wallet shows for the card.
    public var displayName: String

    public init(
        attemptId: String, decision: Decision, stepUpMethods: [String]?, provisionPayload: String,
        tokenizationProvider: String, network: String, lastDigits: String, displayName: String
    ) {
        self.attemptId = attemptId
        self.decision = decision
        self.stepUpMethods = stepUpMethods
        self.provisionPayload = provisionPayload
        self.tokenizationProvider = tokenizationProvider
        self.network = network
        self.lastDigits = lastDigits
        self.displayName = displayName
    }
}
