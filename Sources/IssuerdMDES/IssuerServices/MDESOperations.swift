import IssuerdCore

/// The seven issuer-hosted operations of Mastercard's "MDES Pre-Digitization API"
/// (`POST /mdes/issuerServices/1/0/{op}`; docs/networks.md).
public enum MDESOperation: String, Sendable, CaseIterable {
    case authorizeService, requestActivationMethods, deliverActivationCode, notifyServiceActivated
    case notifyTokenUpdated, validateActivationCode, notifySuspiciousEvents
}

/// The fields every request checks: `requestId` and, where present, `correlationId`.
func validateCommon(requestId: String, correlationId: String?) throws {
    try MDESField.check(requestId, "requestId", 1...64)
    try MDESField.check(correlationId, "correlationId", 1...14)
}

/// The fields Authorize Service and Request Activation Methods both carry.
protocol MDESTokenRequestFields {
    var requestId: String { get }
    var services: [MDESService] { get }
    var fundingAccountInfo: MDESFundingAccountInfo { get }
    var correlationId: String { get }
    var tokenType: MDESTokenType { get }
    var tokenRequestorId: String? { get }
    var walletId: String? { get }
    var paymentAppInstanceId: String? { get }
}

extension MDESTokenRequestFields {
    /// Checks the shared fields, in the order both operations check them first.
    func validateSharedFields() throws {
        try validateCommon(requestId: requestId, correlationId: correlationId)
        try MDESField.check(services.map(\.text), "services", limit: 8, 1...32)
        try fundingAccountInfo.validate("fundingAccountInfo")
        try MDESField.check(tokenType, "tokenType", 1...16)
        try MDESField.digits(tokenRequestorId, "tokenRequestorId", 11...11)
        try MDESField.check(walletId, "walletId", 1...3)
        try MDESField.check(paymentAppInstanceId, "paymentAppInstanceId", 1...48)
    }
}

/// Authorize Service request.
public struct MDESAuthorizeServiceRequest: Codable, Sendable, MDESTokenRequestFields {
    public var requestId: String
    public var services: [MDESService]
    public var fundingAccountInfo: MDESFundingAccountInfo
    public var correlationId: String
    public var tokenType: MDESTokenType
    public var tokenRequestorId: String?
    public var walletId: String?
    public var paymentAppInstanceId: String?
    public var accountIdHash: String?
    public var mobileNumberSuffix: String?
    public var activeTokenCount: String?
    public var deviceInfo: MDESDeviceInfo?
    public var walletProviderDecisioningInfo: MDESWalletProviderDecisioningInfo?
    public var consumerFacingEntityName: String?
    public var panSequenceNumber: String?

    public func validate() throws {
        try validateSharedFields()
        if let hash = accountIdHash {
            try MDESField.check(hash, "accountIdHash", 1...64)
            guard hash.utf8.allSatisfy({ Hex.value(of: $0) != nil }) else {
                throw MDESRequestError.invalidField("accountIdHash", "must be hex")
            }
        }
        try MDESField.check(mobileNumberSuffix, "mobileNumberSuffix", 4...32)
        try MDESField.digits(activeTokenCount, "activeTokenCount", 1...2)
        try deviceInfo?.validate()
        try walletProviderDecisioningInfo?.validate()
        try MDESField.check(consumerFacingEntityName, "consumerFacingEntityName", 1...100)
        try MDESField.digits(panSequenceNumber, "panSequenceNumber", 3...3)
    }
}

extension MDESField {
    /// A list of at most `limit` entries, each of `lengths`, and at least one.
    static func check(_ values: [String], _ field: String, limit: Int, _ lengths: ClosedRange<Int>) throws {
        guard !values.isEmpty else { throw MDESRequestError.invalidField(field, "must not be empty") }
        try list(values, field, limit: limit, lengths)
    }
}

/// Authorize Service answer.
public struct MDESAuthorizeServiceResponse: Codable, Sendable, Equatable {
    public var responseId: String
    public var decision: MDESDecision
    public var services: [MDESService]
    public var activationMethods: [MDESActivationMethod]?
    public var encryptedPayload: EncryptedPayload?
    public var cvcResponse: MDESCVCResponse?

    public init(
        responseId: String, decision: MDESDecision, services: [MDESService],
        activationMethods: [MDESActivationMethod]? = nil, encryptedPayload: EncryptedPayload? = nil,
        cvcResponse: MDESCVCResponse? = nil
    ) {
        self.responseId = responseId
        self.decision = decision
        self.services = services
        self.activationMethods = activationMethods
        self.encryptedPayload = encryptedPayload
        self.cvcResponse = cvcResponse
    }
}

/// Request Activation Methods request.
public struct MDESRequestActivationMethodsRequest: Codable, Sendable, MDESTokenRequestFields {
    public var requestId: String
    public var services: [MDESService]
    public var fundingAccountInfo: MDESFundingAccountInfo
    public var correlationId: String
    public var tokenType: MDESTokenType
    public var tokenRequestorId: String?
    public var walletId: String?
    public var paymentAppInstanceId: String?
    public var accountIdHash: String?
    public var mobileNumberSuffix: String?
    public var consumerFacingEntityName: String?
    public var reasonCodes: [String]?

    public func validate() throws {
        try validateSharedFields()
        try MDESField.check(accountIdHash, "accountIdHash", 1...64)
        try MDESField.check(mobileNumberSuffix, "mobileNumberSuffix", 4...32)
        try MDESField.check(consumerFacingEntityName, "consumerFacingEntityName", 1...100)
        try MDESField.list(reasonCodes, "reasonCodes", limit: 16, 1...32)
    }
}

/// Request Activation Methods answer: `[]` when none.
public struct MDESRequestActivationMethodsResponse: Codable, Sendable, Equatable {
    public var responseId: String
    public var activationMethods: [MDESActivationMethod]
    public init(responseId: String, activationMethods: [MDESActivationMethod]) {
        self.responseId = responseId
        self.activationMethods = activationMethods
    }
}

/// Deliver Activation Code request.
public struct MDESDeliverActivationCodeRequest: Codable, Sendable {
    /// The shortest code MDES may give: a code is guessed in one of 10^length tries, and issuerd's
    /// own codes have six digits.
    public static let minimumCodeLength = 6

    public var requestId: String
    public var tokenUniqueReference: String
    public var correlationId: String
    public var activationMethod: MDESActivationMethod
    public var activationCode: String?
    public var expirationDateTime: String?
    public var reasonCodes: [String]?
    public var consumerFacingEntityName: String?

    public func validate() throws {
        try validateCommon(requestId: requestId, correlationId: correlationId)
        try MDESField.check(tokenUniqueReference, "tokenUniqueReference", 1...64)
        try activationMethod.validate("activationMethod")
        try MDESField.check(activationCode, "activationCode", Self.minimumCodeLength...32)
        try MDESField.dateTime(expirationDateTime, "expirationDateTime")
        if (activationCode == nil) != (expirationDateTime == nil) {
            throw MDESRequestError.invalidField("expirationDateTime", "must come with activationCode, and only with it")
        }
        try MDESField.list(reasonCodes, "reasonCodes", limit: 16, 1...32)
        try MDESField.check(consumerFacingEntityName, "consumerFacingEntityName", 1...100)
    }
}

/// Notify Service Activated request.
public struct MDESNotifyServiceActivatedRequest: Codable, Sendable {
    public var requestId: String
    public var services: [MDESService]
    public var fundingAccountInfo: MDESFundingAccountInfo
    public var deviceInfo: MDESDeviceInfo?
    public var correlationId: String
    public var tokenRequestorId: String
    public var walletId: String?
    public var paymentAppInstanceId: String?
    public var tokenType: MDESTokenType
    public var secureElementId: String?
    public var accountPanSuffix: String
    public var serviceRequestDateTime: String
    public var termsAndConditionsAssetId: String?
    public var termsAndConditionsAcceptedTimestamp: String?
    public var productConfigurationId: String?
    public var consumerLanguage: String?
    public var decision: MDESDecision
    public var decisionMadeBy: String?
    public var tokenActivatedDateTime: String
    public var numberOfActivationAttempts: Int?
    public var numberOfActiveTokens: Int?
    public var tokenAssuranceLevel: Int?
    public var consumerFacingEntityName: String?

    public func validate() throws {
        try validateCommon(requestId: requestId, correlationId: correlationId)
        try MDESField.check(services.map(\.text), "services", limit: 8, 1...32)
        try fundingAccountInfo.validate("fundingAccountInfo")
        guard fundingAccountInfo.tokenUniqueReference != nil else {
            throw MDESRequestError.invalidField("fundingAccountInfo.tokenUniqueReference", "is required")
        }
        try deviceInfo?.validate()
        try MDESField.digits(tokenRequestorId, "tokenRequestorId", 11...11)
        try MDESField.check(walletId, "walletId", 1...3)
        try MDESField.check(paymentAppInstanceId, "paymentAppInstanceId", 1...48)
        try MDESField.check(tokenType, "tokenType", 1...16)
        try MDESField.check(secureElementId, "secureElementId", 1...128)
        try MDESField.digits(accountPanSuffix, "accountPanSuffix", 4...8)
        try MDESField.dateTime(serviceRequestDateTime, "serviceRequestDateTime")
        try MDESField.check(termsAndConditionsAssetId, "termsAndConditionsAssetId", 1...64)
        try MDESField.dateTime(termsAndConditionsAcceptedTimestamp, "termsAndConditionsAcceptedTimestamp")
        try MDESField.check(productConfigurationId, "productConfigurationId", 1...64)
        try MDESField.check(consumerLanguage, "consumerLanguage", 2...2)
        try MDESField.check(decision, "decision", 1...64)
        try MDESField.check(decisionMadeBy, "decisionMadeBy", 1...32)
        try MDESField.dateTime(tokenActivatedDateTime, "tokenActivatedDateTime")
        if let value = numberOfActivationAttempts, !(0...9).contains(value) {
            throw MDESRequestError.invalidField("numberOfActivationAttempts", "must be 0 to 9")
        }
        if let value = numberOfActiveTokens, !(0...99).contains(value) {
            throw MDESRequestError.invalidField("numberOfActiveTokens", "must be 0 to 99")
        }
        if let value = tokenAssuranceLevel, !(0...99).contains(value) {
            throw MDESRequestError.invalidField("tokenAssuranceLevel", "must be 0 to 99")
        }
        try MDESField.check(consumerFacingEntityName, "consumerFacingEntityName", 1...100)
    }
}

/// Notify Token Updated request.
public struct MDESNotifyTokenUpdatedRequest: Codable, Sendable {
    public struct Token: Codable, Sendable {
        public struct FundingAccountInfo: Codable, Sendable {
            public var encryptedPayload: EncryptedPayload
        }
        public var tokenUniqueReference: String
        public var status: MDESTokenStatus?
        public var suspendedBy: [MDESSuspendedBy]?
        public var tokenExpiry: String?
        public var fundingAccountInfo: FundingAccountInfo?
    }

    public var requestId: String
    public var reasonCode: MDESTokenUpdateReason
    public var tokens: [Token]

    /// The most tokens one notification may carry.
    public static let maximumTokens = 500

    public func validate() throws {
        try validateCommon(requestId: requestId, correlationId: nil)
        try MDESField.check(reasonCode, "reasonCode", 1...32)
        guard (1...Self.maximumTokens).contains(tokens.count) else {
            throw MDESRequestError.invalidField("tokens", "must hold 1 to \(Self.maximumTokens) entries")
        }
        for token in tokens {
            try MDESField.check(token.tokenUniqueReference, "tokens.tokenUniqueReference", 1...64)
            try MDESField.check(token.status, "tokens.status", 1...32)
            if reasonCode == .statusUpdate, token.status == nil {
                throw MDESRequestError.invalidField("tokens.status", "is required for STATUS_UPDATE")
            }
            try MDESField.list(token.suspendedBy?.map(\.text), "tokens.suspendedBy", limit: 8, 1...32)
            try MDESField.digits(token.tokenExpiry, "tokens.tokenExpiry", 4...4)
        }
    }
}

/// Validate Activation Code request.
public struct MDESValidateActivationCodeRequest: Codable, Sendable {
    public var requestId: String
    public var tokenUniqueReference: String
    public var correlationId: String
    public var activationCode: String

    public func validate() throws {
        try validateCommon(requestId: requestId, correlationId: correlationId)
        try MDESField.check(tokenUniqueReference, "tokenUniqueReference", 1...64)
        try MDESField.check(activationCode, "activationCode", 1...32)
    }
}

/// Validate Activation Code answer.
public struct MDESValidateActivationCodeResponse: Codable, Sendable, Equatable {
    public var responseId: String
    public var result: MDESValidationResult
    public init(responseId: String, result: MDESValidationResult) {
        self.responseId = responseId
        self.result = result
    }
}

/// Notify Suspicious Events request. `events` is typed as one object by the
/// specification's file and may be an array (unverified): both are taken.
public struct MDESNotifySuspiciousEventsRequest: Codable, Sendable {
    public struct Event: Codable, Sendable, Equatable {
        public var eventName: String
        public var walletAtcStatus: [String: [String]]?
        public var systemAtcStatus: [String: [String]]?
    }

    public var requestId: String
    public var tokenUniqueReference: String
    public var paymentAppInstanceId: String?
    public var status: MDESTokenStatus
    public var events: [Event]

    enum CodingKeys: String, CodingKey {
        case requestId, tokenUniqueReference, paymentAppInstanceId, status, events
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        requestId = try container.decode(String.self, forKey: .requestId)
        tokenUniqueReference = try container.decode(String.self, forKey: .tokenUniqueReference)
        paymentAppInstanceId = try container.decodeIfPresent(String.self, forKey: .paymentAppInstanceId)
        status = try container.decode(MDESTokenStatus.self, forKey: .status)
        if let list = try? container.decode([Event].self, forKey: .events) {
            events = list
        } else {
            events = [try container.decode(Event.self, forKey: .events)]
        }
    }

    public func validate() throws {
        try validateCommon(requestId: requestId, correlationId: nil)
        try MDESField.check(tokenUniqueReference, "tokenUniqueReference", 1...64)
        try MDESField.check(paymentAppInstanceId, "paymentAppInstanceId", 1...48)
        try MDESField.check(status, "status", 1...32)
        guard (1...64).contains(events.count) else {
            throw MDESRequestError.invalidField("events", "must hold 1 to 64 events")
        }
        for event in events {
            try MDESField.check(event.eventName, "events.eventName", 1...64)
            for (name, status) in [
                ("walletAtcStatus", event.walletAtcStatus), ("systemAtcStatus", event.systemAtcStatus),
            ] {
                guard let status else { continue }
                guard status.count <= 16, status.allSatisfy({ $0.key.count <= 64 && $0.value.count <= 256 }),
                    status.values.joined().allSatisfy({ $0.count <= 32 })
                else { throw MDESRequestError.invalidField("events.\(name)", "is too large") }
            }
        }
    }
}
