/// `POST /v1/cards/{cardId}/google-pay/push-provisioning`: what the issuer's Android app sends
/// before it calls `pushTokenize`.
public struct GooglePayPushRequest: Codable, Sendable, Equatable {
    /// Google's push session id (from the Google Pay SDK); asks for ``GooglePayPushResponse/googleOpaquePaymentCard``.
    public var serverSessionId: String?
    /// The device the card is pushed to (`id`, `type`, `locale`, `ipAddress`).
    public var device: DeviceInfo?
    /// The Google Pay SDK's ids of the device and the wallet account; required for a Visa card
    /// (they go into Visa's encrypted payment instrument), ignored for Mastercard.
    public var walletInfo: GooglePayWalletInfo?

    public init(serverSessionId: String? = nil, device: DeviceInfo? = nil, walletInfo: GooglePayWalletInfo? = nil) {
        self.serverSessionId = serverSessionId
        self.device = device
        self.walletInfo = walletInfo
    }
}

/// The Google Pay SDK's `getStableHardwareId` and `getActiveWalletId`.
public struct GooglePayWalletInfo: Codable, Sendable, Equatable {
    public var deviceId: String?
    public var walletAccountId: String?

    public init(deviceId: String? = nil, walletAccountId: String? = nil) {
        self.deviceId = deviceId
        self.walletAccountId = walletAccountId
    }
}

/// 200 answer to a Google Pay push (green or yellow): what the app hands `pushTokenize`.
public struct GooglePayPushResponse: Codable, Sendable, Equatable {
    public var attemptId: String
    public var decision: Decision
    /// The step-up methods a yellow decision allows (absent when green).
    public var stepUpMethods: [String]?
    /// The network's opaque payment card (`PushTokenizeRequest.setOpaquePaymentCard`, its UTF-8
    /// bytes): for Mastercard Base64 of JSON, for Visa the compact JWE of Visa's encrypted
    /// payment instrument.
    public var opaquePaymentCard: String
    /// `mastercard` or `visa` (`setTokenServiceProvider`).
    public var tokenServiceProvider: String
    /// `mastercard` or `visa` (`setNetwork`).
    public var network: String
    /// The card's last four digits (`setLastDigits`).
    public var lastDigits: String
    /// What Google Pay shows for the card (`setDisplayName`).
    public var displayName: String
    /// What the issuer holds of the cardholder's address (`setUserAddress`).
    public var userAddress: GooglePayUserAddress
    /// Base64 of the OpenPGP-protected `GoogleOpaquePaymentCard`, when `serverSessionId` was sent
    /// and the issuer's and Google's OpenPGP keys are configured.
    public var googleOpaquePaymentCard: String?

    public init(
        attemptId: String, decision: Decision, stepUpMethods: [String]?, opaquePaymentCard: String,
        tokenServiceProvider: String, network: String, lastDigits: String, displayName: String,
        userAddress: GooglePayUserAddress, googleOpaquePaymentCard: String?
    ) {
        self.attemptId = attemptId
        self.decision = decision
        self.stepUpMethods = stepUpMethods
        self.opaquePaymentCard = opaquePaymentCard
        self.tokenServiceProvider = tokenServiceProvider
        self.network = network
        self.lastDigits = lastDigits
        self.displayName = displayName
        self.userAddress = userAddress
        self.googleOpaquePaymentCard = googleOpaquePaymentCard
    }
}

/// Google's `UserAddress` fields; issuerd fills those it holds (the name on the card, the
/// customer's phone number, the card's country) and leaves the rest out.
public struct GooglePayUserAddress: Codable, Sendable, Equatable {
    public var name: String?
    public var address1: String?
    public var address2: String?
    public var locality: String?
    public var administrativeArea: String?
    public var countryCode: String?
    public var postalCode: String?
    public var phoneNumber: String?

    public init(
        name: String? = nil, address1: String? = nil, address2: String? = nil, locality: String? = nil,
        administrativeArea: String? = nil, countryCode: String? = nil, postalCode: String? = nil,
        phoneNumber: String? = nil
    ) {
        self.name = name
        self.address1 = address1
        self.address2 = address2
        self.locality = locality
        self.administrativeArea = administrativeArea
        self.countryCode = countryCode
        self.postalCode = postalCode
        self.phoneNumber = phoneNumber
    }
}

/// `POST /v1/cards/{cardId}/google-pay/activations`: the app-to-app yellow path, called by the
/// issuer's Android app once it has authenticated the cardholder. One of the two locators.
public struct GooglePayActivationRequest: Codable, Sendable, Equatable {
    /// The token's reference (Mastercard's `tokenUniqueReference`).
    public var tokenReference: String?
    /// `Intent.EXTRA_TEXT` exactly as Google Wallet delivered it (Base64 of JSON carrying `tokenUniqueReference`).
    public var extraText: String?

    public init(tokenReference: String? = nil, extraText: String? = nil) {
        self.tokenReference = tokenReference
        self.extraText = extraText
    }
}

/// 200 answer of an app-to-app activation: `result` is what the app returns to Google Wallet in
/// `BANKING_APP_ACTIVATION_RESPONSE` (`approved` or `declined`; the app answers `failure` on any
/// error status).
public struct GooglePayActivationResponse: Codable, Sendable, Equatable {
    public var result: String
    public var tokenReference: String?
    /// Why a `declined` was declined: `token_not_found`, `not_awaiting_verification` or
    /// `app_not_offered` (the risk decision left the issuer app out of the token's step-up methods).
    public var reason: String?

    public init(result: String, tokenReference: String?, reason: String? = nil) {
        self.result = result
        self.tokenReference = tokenReference
        self.reason = reason
    }
}
