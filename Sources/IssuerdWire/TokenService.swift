/// `POST /v1/tsp/tokenization/authorize`: a token service provider asks whether to tokenize.
public struct TokenizationAuthorizeRequest: Codable, Sendable, Equatable {
    public var requestId: String
    public var tokenReference: String
    public var tokenRequestorId: String?
    /// `manual`, `camera`, `push` or `on_file`.
    public var tokenizationSource: String?
    public var card: CardCredentials
    public var device: DeviceInfo?
    public var wallet: WalletSignals?
    public var activeTokenCount: Int?

    public init(
        requestId: String, tokenReference: String, tokenRequestorId: String? = nil, tokenizationSource: String? = nil,
        card: CardCredentials, device: DeviceInfo? = nil, wallet: WalletSignals? = nil, activeTokenCount: Int? = nil
    ) {
        self.requestId = requestId
        self.tokenReference = tokenReference
        self.tokenRequestorId = tokenRequestorId
        self.tokenizationSource = tokenizationSource
        self.card = card
        self.device = device
        self.wallet = wallet
        self.activeTokenCount = activeTokenCount
    }
}

/// The card as typed or scanned into Wallet. `accountNumber` is a PAN: never log this type.
public struct CardCredentials: Codable, Sendable, Equatable, CustomStringConvertible {
    public var accountNumber: String
    /// `MM/YY`.
    public var expiration: String

    public init(accountNumber: String, expiration: String) {
        self.accountNumber = accountNumber
        self.expiration = expiration
    }

    public var description: String { "CardCredentials(****)" }
}

/// Risk signals the wallet sends with a tokenization request.
public struct WalletSignals: Codable, Sendable, Equatable {
    /// 1 (riskiest) to 5.
    public var deviceScore: Int?
    /// 1 (riskiest) to 5.
    public var accountScore: Int?
    /// 1 (riskiest) to 5.
    public var phoneNumberScore: Int?
    /// `APPROVED`, `REQUIRE_ADDITIONAL_AUTHENTICATION` or `DECLINED`.
    public var recommendedDecision: String?
    public var reasonCodes: [String]?
    /// Visa token risk score 01-99, where sent.
    public var tokenRiskScore: Int?

    public init(
        deviceScore: Int? = nil, accountScore: Int? = nil, phoneNumberScore: Int? = nil,
        recommendedDecision: String? = nil,
        reasonCodes: [String]? = nil, tokenRiskScore: Int? = nil
    ) {
        self.deviceScore = deviceScore
        self.accountScore = accountScore
        self.phoneNumberScore = phoneNumberScore
        self.recommendedDecision = recommendedDecision
        self.reasonCodes = reasonCodes
        self.tokenRiskScore = tokenRiskScore
    }
}

/// 200 answer to a tokenization authorization.
public struct TokenizationAuthorizeResponse: Codable, Sendable, Equatable {
    /// `APPROVED`, `REQUIRE_ADDITIONAL_AUTHENTICATION` or `DECLINED`.
    public var decision: String
    public var flow: String
    public var attemptId: String
    public var reasons: [Reason]
    public var activationMethods: [ActivationMethod]

    public init(
        decision: String, flow: String, attemptId: String, reasons: [Reason], activationMethods: [ActivationMethod]
    ) {
        self.decision = decision
        self.flow = flow
        self.attemptId = attemptId
        self.reasons = reasons
        self.activationMethods = activationMethods
    }
}

/// A step-up method offered to the cardholder, with its destination masked.
public struct ActivationMethod: Codable, Sendable, Equatable {
    public var id: String
    /// `sms`, `ars`, `email` or `app`.
    public var type: String
    /// Masked destination, e.g. `010-****-5678`.
    public var value: String

    public init(id: String, type: String, value: String) {
        self.id = id
        self.type = type
        self.value = value
    }
}

/// `POST /v1/tsp/token-events`: the TSP reports a token lifecycle change.
public struct TokenEvent: Codable, Sendable, Equatable {
    public var tokenReference: String
    /// `created`, `activated`, `suspended`, `resumed` or `deleted`.
    public var event: String
    /// ISO-8601 time of the event.
    public var at: String
    /// Why, when the service says: `fraud` on a `deleted` event records a network fraud signal
    /// on the attempt that created the token.
    public var reason: String?

    public init(tokenReference: String, event: String, at: String, reason: String? = nil) {
        self.tokenReference = tokenReference
        self.event = event
        self.at = at
        self.reason = reason
    }
}
