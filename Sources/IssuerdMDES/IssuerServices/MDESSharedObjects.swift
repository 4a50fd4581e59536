/// `fundingAccountInfo` of the MDES Pre-Digitization API (Schema1 and Schema2; the NTU form has
/// only the payload).
public struct MDESFundingAccountInfo: Codable, Sendable, Equatable {
    public var tokenUniqueReference: String?
    public var panUniqueReference: String?
    public var encryptedPayload: EncryptedPayload

    func validate(_ prefix: String) throws {
        try MDESField.check(tokenUniqueReference, prefix + ".tokenUniqueReference", 1...64)
        try MDESField.check(panUniqueReference, prefix + ".panUniqueReference", 1...64)
    }
}

/// The decrypted `encryptedPayload` of Authorize Service, Request Activation Methods and Notify
/// Service Activated (`FundingAccountData`), and of Notify Token Updated (its `tokenData`
/// then required). Holds card data: never logged, never stored.
public struct MDESFundingAccountData: Decodable, Sendable, ValidityStamped {
    public struct CardAccountData: Decodable, Sendable {
        public var accountNumber: String
        public var expiryMonth: String?
        public var expiryYear: String?
        public var securityCode: String?
    }

    public struct TokenData: Decodable, Sendable {
        public var token: String
        public var expiryMonth: String
        public var expiryYear: String
        public var sequenceNumber: String?
    }

    public struct AccountHolderData: Decodable, Sendable {
        public var accountHolderName: String?
        public var accountHolderEmailAddress: String?
        public var sourceIp: String?
        public var deviceLocation: String?
        public var consumerIdentifier: String?
    }

    public var cardAccountData: CardAccountData?
    public var source: MDESFundingSource?
    public var dataValidUntilTimestamp: String?
    public var tokenData: TokenData?
    public var paymentAccountReference: String?
    public var accountHolderData: AccountHolderData?

    /// Checks the bounds; `cardAccountData` is required unless `requireCard` is false (NTU).
    public func validate(requireCard: Bool = true, requireToken: Bool = false) throws {
        if let card = cardAccountData {
            try MDESField.digits(card.accountNumber, "cardAccountData.accountNumber", 9...19)
            try MDESField.digits(card.expiryMonth, "cardAccountData.expiryMonth", 2...2)
            try MDESField.digits(card.expiryYear, "cardAccountData.expiryYear", 2...2)
            try MDESField.digits(card.securityCode, "cardAccountData.securityCode", 3...4)
        } else if requireCard {
            throw MDESRequestError.invalidField("cardAccountData", "is required")
        }
        if let token = tokenData {
            try MDESField.digits(token.token, "tokenData.token", 12...19)
            try MDESField.digits(token.expiryMonth, "tokenData.expiryMonth", 2...2)
            try MDESField.digits(token.expiryYear, "tokenData.expiryYear", 2...2)
            try MDESField.digits(token.sequenceNumber, "tokenData.sequenceNumber", 1...3)
        } else if requireToken {
            throw MDESRequestError.invalidField("tokenData", "is required")
        }
        try MDESField.check(source, "source", 1...32)
        try MDESField.check(paymentAccountReference, "paymentAccountReference", 29...29)
        if let holder = accountHolderData {
            try MDESField.check(holder.accountHolderName, "accountHolderData.accountHolderName", 1...27)
            try MDESField.check(
                holder.accountHolderEmailAddress, "accountHolderData.accountHolderEmailAddress", 6...320)
            try MDESField.check(holder.sourceIp, "accountHolderData.sourceIp", 7...64)
            try MDESField.check(holder.deviceLocation, "accountHolderData.deviceLocation", 1...64)
            try MDESField.check(holder.consumerIdentifier, "accountHolderData.consumerIdentifier", 1...88)
        }
    }
}

/// `deviceInfo`: every field optional, the lists open.
public struct MDESDeviceInfo: Codable, Sendable, Equatable {
    public var deviceName: String?
    public var serialNumber: String?
    public var formFactor: String?
    public var isoDeviceType: String?
    public var osName: String?
    public var osVersion: String?
    public var imei: String?
    public var msisdn: String?
    public var paymentTypes: [String]?
    public var storageTechnology: String?
    public var cardCaptureTechnology: String?

    func validate() throws {
        try MDESField.check(deviceName, "deviceInfo.deviceName", 1...64)
        try MDESField.check(serialNumber, "deviceInfo.serialNumber", 1...64)
        try MDESField.check(formFactor, "deviceInfo.formFactor", 1...64)
        try MDESField.check(isoDeviceType, "deviceInfo.isoDeviceType", 1...2)
        try MDESField.check(osName, "deviceInfo.osName", 1...32)
        try MDESField.check(osVersion, "deviceInfo.osVersion", 1...32)
        try MDESField.check(imei, "deviceInfo.imei", 15...15)
        try MDESField.check(msisdn, "deviceInfo.msisdn", 1...15)
        try MDESField.list(paymentTypes, "deviceInfo.paymentTypes", limit: 16, 1...32)
        try MDESField.check(storageTechnology, "deviceInfo.storageTechnology", 1...32)
        try MDESField.check(cardCaptureTechnology, "deviceInfo.cardCaptureTechnology", 1...32)
    }
}

/// `walletProviderDecisioningInfo`.
public struct MDESWalletProviderDecisioningInfo: Codable, Sendable, Equatable {
    public var recommendedDecision: MDESDecision?
    public var recommendationStandardVersion: String?
    public var deviceScore: String?
    public var accountScore: String?
    public var phoneNumberScore: String?
    public var accountLifeTime: String?
    public var recommendationReasons: [String]?

    func validate() throws {
        try MDESField.check(recommendedDecision, "walletProviderDecisioningInfo.recommendedDecision", 1...64)
        try MDESField.check(
            recommendationStandardVersion, "walletProviderDecisioningInfo.recommendationStandardVersion", 1...64)
        for (name, score) in [
            ("deviceScore", deviceScore), ("accountScore", accountScore), ("phoneNumberScore", phoneNumberScore),
        ] {
            if let score, !(["1", "2", "3", "4", "5"].contains(score)) {
                throw MDESRequestError.invalidField("walletProviderDecisioningInfo.\(name)", "must be 1 to 5")
            }
        }
        try MDESField.digits(accountLifeTime, "walletProviderDecisioningInfo.accountLifeTime", 1...2)
        try MDESField.list(
            recommendationReasons, "walletProviderDecisioningInfo.recommendationReasons", limit: 32, 1...64)
    }

    /// A score as a number (validated 1–5).
    public static func score(_ text: String?) -> Int? { text.flatMap { Int($0) } }
}

/// `activationMethod`.
public struct MDESActivationMethod: Codable, Sendable, Equatable {
    public var type: MDESActivationMethodType
    public var value: String

    public init(type: MDESActivationMethodType, value: String) {
        self.type = type
        self.value = value
    }

    func validate(_ field: String) throws {
        try MDESField.check(type, field + ".type", 1...64)
        try MDESField.check(value, field + ".value", 1...64)
    }
}

/// `ErrorsResponse`: the answer to a request issuerd could not process.
public struct MDESErrorsResponse: Codable, Sendable, Equatable {
    public var responseId: String
    public var errorCode: String?
    public var errorDescription: String?

    public init(responseId: String, error: MDESRequestError) {
        self.responseId = responseId
        self.errorCode = error.errorCode
        self.errorDescription = error.description
    }
}

/// The answer that carries only `responseId` (Deliver Activation Code, the notifications).
public struct MDESAcknowledgement: Codable, Sendable, Equatable {
    public var responseId: String
    public init(responseId: String) { self.responseId = responseId }
}

/// What every request starts with, read before the rest to find a stored answer.
public struct MDESRequestHead: Decodable, Sendable {
    public var requestId: String?
}

/// `responseId` for a `requestId`: the request's own id, echoed (1–64 characters, as the
/// `requestId`; echoing is common practice).
public enum MDESResponseID {
    /// The longest `responseId` Mastercard's schema allows.
    public static let maximumLength = 64

    public static func responseId(for requestId: String) -> String { requestId }

    /// The `responseId` of a request whose own `requestId` could not be read: the request's
    /// `X-Request-Id` (up to 128 characters), cut to the schema's 64.
    public static func responseId(forUnread requestHeaderId: String) -> String {
        String(requestHeaderId.prefix(maximumLength))
    }
}
