/// `POST /v1/admin/customers`: create or update a customer.
public struct CustomerUpsertRequest: Codable, Sendable, Equatable {
    public var customerId: String
    public var phoneNumber: String?
    public var email: String?
    /// ISO-8601; when absent, a changed phone number is stamped with the current time.
    public var phoneChangedAt: String?
    public var emailChangedAt: String?
    public var addressChangedAt: String?

    public init(
        customerId: String, phoneNumber: String? = nil, email: String? = nil, phoneChangedAt: String? = nil,
        emailChangedAt: String? = nil, addressChangedAt: String? = nil
    ) {
        self.customerId = customerId
        self.phoneNumber = phoneNumber
        self.email = email
        self.phoneChangedAt = phoneChangedAt
        self.emailChangedAt = emailChangedAt
        self.addressChangedAt = addressChangedAt
    }
}

/// `POST /v1/admin/cards`: register a card. The answer never echoes the PAN.
public struct CardCreateRequest: Codable, Sendable, Equatable, CustomStringConvertible {
    public var cardId: String?
    public var customerId: String
    public var accountNumber: String
    /// `MM/YY`.
    public var expiration: String
    public var cardholderName: String
    public var paymentNetwork: String
    public var status: String?
    public var localizedDescription: String?
    /// ISO 3166-1 alpha-2 country of issue, e.g. `KR`.
    public var country: String?

    public init(
        cardId: String? = nil, customerId: String, accountNumber: String, expiration: String, cardholderName: String,
        paymentNetwork: String, status: String? = nil, localizedDescription: String? = nil, country: String? = nil
    ) {
        self.cardId = cardId
        self.customerId = customerId
        self.accountNumber = accountNumber
        self.expiration = expiration
        self.cardholderName = cardholderName
        self.paymentNetwork = paymentNetwork
        self.status = status
        self.localizedDescription = localizedDescription
        self.country = country
    }

    public var description: String {
        "CardCreateRequest(cardId: \(cardId ?? "nil"), customerId: \(customerId), accountNumber: ****)"
    }
}

/// `POST /v1/admin/cards/{cardId}/status`.
public struct CardStatusRequest: Codable, Sendable, Equatable {
    /// `active`, `lost`, `stolen`, `blocked` or `closed`.
    public var status: String
    public var reason: String?

    public init(status: String, reason: String? = nil) {
        self.status = status
        self.reason = reason
    }
}

/// An admin view of a card (no PAN).
public struct AdminCard: Codable, Sendable, Equatable {
    public var cardId: String
    public var customerId: String
    public var primaryAccountSuffix: String
    public var expiration: String
    public var cardholderName: String
    public var paymentNetwork: String
    public var status: String
    public var localizedDescription: String
    public var primaryAccountIdentifier: String
    public var country: String?

    public init(
        cardId: String, customerId: String, primaryAccountSuffix: String, expiration: String, cardholderName: String,
        paymentNetwork: String, status: String, localizedDescription: String, primaryAccountIdentifier: String,
        country: String?
    ) {
        self.cardId = cardId
        self.customerId = customerId
        self.primaryAccountSuffix = primaryAccountSuffix
        self.expiration = expiration
        self.cardholderName = cardholderName
        self.paymentNetwork = paymentNetwork
        self.status = status
        self.localizedDescription = localizedDescription
        self.primaryAccountIdentifier = primaryAccountIdentifier
        self.country = country
    }
}

/// The error envelope (docs/openapi.yaml, `ErrorEnvelope`): `{"error":{"code","message",...}}`.
public struct ErrorEnvelope: Codable, Sendable, Equatable {
    public var error: ErrorBody
    public init(error: ErrorBody) { self.error = error }
}

/// The body of an error answer; extra context fields (e.g. `detail`, `flow`, `attemptId`,
/// `reasons`) are decoded where this client knows them.
public struct ErrorBody: Codable, Sendable, Equatable {
    public var code: String
    public var message: String
    public var detail: String?
    public var flow: String?
    public var attemptId: String?
    public var reasons: [Reason]?
    public var requestId: String?

    public init(
        code: String, message: String, detail: String? = nil, flow: String? = nil, attemptId: String? = nil,
        reasons: [Reason]? = nil, requestId: String? = nil
    ) {
        self.code = code
        self.message = message
        self.detail = detail
        self.flow = flow
        self.attemptId = attemptId
        self.reasons = reasons
        self.requestId = requestId
    }
}
