/// `POST /v1/tsp/activation-codes`: deliver a one-time code by the chosen method.
public struct ActivationCodeRequest: Codable, Sendable, Equatable {
    public var tokenReference: String
    /// An `id` from the authorization's `activationMethods`.
    public var activationMethodId: String

    public init(tokenReference: String, activationMethodId: String) {
        self.tokenReference = tokenReference
        self.activationMethodId = activationMethodId
    }
}

/// 201 answer: the challenge that was created and queued for delivery.
public struct ActivationCodeResponse: Codable, Sendable, Equatable {
    public var challengeId: String
    public var method: String
    /// ISO-8601.
    public var expiresAt: String

    public init(challengeId: String, method: String, expiresAt: String) {
        self.challengeId = challengeId
        self.method = method
        self.expiresAt = expiresAt
    }
}

/// `POST /v1/tsp/activation-codes/verify`.
public struct ActivationCodeVerifyRequest: Codable, Sendable, Equatable {
    public var tokenReference: String
    public var code: String

    public init(tokenReference: String, code: String) {
        self.tokenReference = tokenReference
        self.code = code
    }
}

/// The outcome of a code entry.
public struct ActivationCodeVerifyResponse: Codable, Sendable, Equatable {
    /// `verified`, `invalid`, `expired` or `locked`.
    public var result: String
    public var attemptsRemaining: Int

    public init(result: String, attemptsRemaining: Int) {
        self.result = result
        self.attemptsRemaining = attemptsRemaining
    }
}

/// `POST /v1/wallet/verifications`: In-App Verification from the Wallet deep link. At least one
/// locator must be present.
public struct WalletVerificationRequest: Codable, Sendable, Equatable {
    public var serialNumber: String?
    public var passTypeIdentifier: String?
    public var tokenReference: String?

    public init(serialNumber: String? = nil, passTypeIdentifier: String? = nil, tokenReference: String? = nil) {
        self.serialNumber = serialNumber
        self.passTypeIdentifier = passTypeIdentifier
        self.tokenReference = tokenReference
    }
}

/// 200 answer: the token is active and the app may pass `activationData` to
/// `PKPassLibrary.activate(_:activationData:)`.
public struct WalletVerificationResponse: Codable, Sendable, Equatable {
    public var tokenReference: String
    public var status: String
    /// Base64 of the activation data.
    public var activationData: String

    public init(tokenReference: String, status: String, activationData: String) {
        self.tokenReference = tokenReference
        self.status = status
        self.activationData = activationData
    }
}
