/// `POST /v1/cards/{cardId}/apple-pay/provision`: what PassKit handed the issuer app.
public struct ProvisioningRequest: Codable, Sendable, Equatable {
    /// DER certificates, leaf first, then the sub-CA; base64, base64url or hex.
    public var certificates: [String]
    /// The nonce from PassKit; base64, base64url or hex.
    public var nonce: String
    /// The nonce signature from PassKit; base64, base64url or hex.
    public var nonceSignature: String
    /// `ECC_V2` (default) or `RSA_V2`.
    public var encryptionScheme: String?
    /// `in_app` (default) or `wallet_extension`.
    public var channel: String?
    public var device: DeviceInfo?

    public init(
        certificates: [String], nonce: String, nonceSignature: String, encryptionScheme: String? = nil,
        channel: String? = nil, device: DeviceInfo? = nil
    ) {
        self.certificates = certificates
        self.nonce = nonce
        self.nonceSignature = nonceSignature
        self.encryptionScheme = encryptionScheme
        self.channel = channel
        self.device = device
    }
}

/// The device asking to add a card, as far as the caller knows it.
public struct DeviceInfo: Codable, Sendable, Equatable {
    public var id: String?
    /// `phone`, `watch` or `tablet`.
    public var type: String?
    public var name: String?
    public var model: String?
    public var osVersion: String?
    /// e.g. `ko_KR`.
    public var locale: String?
    public var ipAddress: String?

    public init(
        id: String? = nil, type: String? = nil, name: String? = nil, model: String? = nil, osVersion: String? = nil,
        locale: String? = nil, ipAddress: String? = nil
    ) {
        self.id = id
        self.type = type
        self.name = name
        self.model = model
        self.osVersion = osVersion
        self.locale = locale
        self.ipAddress = ipAddress
    }
}

/// 200 answer to a provisioning request (green or yellow).
public struct ProvisioningResponse: Codable, Sendable, Equatable {
    /// Base64 of the encrypted pass payload (ciphertext ‖ GCM tag).
    public var encryptedPassData: String
    /// Base64 of the network's activation data.
    public var activationData: String
    /// Base64 of the 65-byte uncompressed ephemeral P-256 key (ECC_V2).
    public var ephemeralPublicKey: String?
    /// Base64 of the RSA-OAEP wrapped AES key (RSA_V2).
    public var wrappedKey: String?
    public var decision: Decision

    public init(
        encryptedPassData: String, activationData: String, ephemeralPublicKey: String?, wrappedKey: String?,
        decision: Decision
    ) {
        self.encryptedPassData = encryptedPassData
        self.activationData = activationData
        self.ephemeralPublicKey = ephemeralPublicKey
        self.wrappedKey = wrappedKey
        self.decision = decision
    }
}

/// The risk decision carried by provisioning answers.
public struct Decision: Codable, Sendable, Equatable {
    /// `green`, `yellow` or `orange`.
    public var flow: String
    public var attemptId: String
    public var reasons: [Reason]

    public init(flow: String, attemptId: String, reasons: [Reason]) {
        self.flow = flow
        self.attemptId = attemptId
        self.reasons = reasons
    }
}

/// One rule that contributed to a decision.
public struct Reason: Codable, Sendable, Equatable {
    /// The rule id, e.g. `wallet.low_device_score`.
    public var rule: String
    /// The rule's reason code.
    public var reason: String

    public init(rule: String, reason: String) {
        self.rule = rule
        self.reason = reason
    }
}
