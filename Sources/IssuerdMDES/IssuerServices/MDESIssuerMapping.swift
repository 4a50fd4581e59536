import Foundation
import IssuerdCore

/// How MDES's values map onto issuerd's own names (the rule language's, the step-up methods'),
/// kept here so the flows stay routing (docs/networks.md, "Authorize Service").
extension MDESFundingSource {
    /// The rule language's `request.source` name; nil for a value this version does not know.
    public var ruleName: String? {
        switch self {
        case .accountAddedManually: "manual"
        case .accountAddedViaApplication: "push"
        case .accountOnFile: "on_file"
        case .existingTokenCredential: "existing_token"
        case .accountAddedViaBrowser: "browser"
        case .accountAddedViaChipData: "chip"
        case .unknown: nil
        }
    }
}

extension MDESDeviceInfo {
    /// The rule language's `device.type` from `formFactor`: phone, watch, tablet or other.
    public var ruleDeviceType: String? {
        switch formFactor {
        case "PHONE": "phone"
        case "WATCH", "WATCH_OR_WRISTBAND": "watch"
        case "TABLET", "TABLET_OR_EREADER": "tablet"
        case nil: nil
        default: "other"
        }
    }
}

extension MDESActivationMethodType {
    /// The activation method of a step-up method (`sms`, `email`, `ars`, `app`).
    public init?(stepUpMethod: String) {
        switch stepUpMethod {
        case "sms": self = .textToCardholderNumber
        case "email": self = .emailToCardholderAddress
        case "ars": self = .cardholderToCallAutomatedNumber
        case "app": self = .cardholderToUseMobileApp
        default: return nil
        }
    }

    /// The step-up method that delivers this activation method; nil for one issuerd does not offer.
    public var stepUpMethod: String? {
        switch self {
        case .textToCardholderNumber: "sms"
        case .emailToCardholderAddress: "email"
        case .cardholderToCallAutomatedNumber: "ars"
        case .cardholderToUseMobileApp: "app"
        default: nil
        }
    }
}

extension MDESAuthorizeServiceRequest {
    /// What an attempt keeps of the request for `explain` and the console: never card data.
    /// Built as the tree the attempt stores (absent values left out), with no JSON text between.
    public func facts(lastFour: String) -> [String: JSONValue] {
        var facts: [String: JSONValue] = [
            "channel": "mdes", "lastFour": .string(lastFour), "correlationId": .string(correlationId),
            "tokenType": .string(tokenType.text),
        ]
        facts["walletId"] = walletId.map(JSONValue.string)
        facts["accountIdHash"] = accountIdHash.map(JSONValue.string)
        facts["activeTokenCount"] = activeTokenCount.map(JSONValue.string)
        facts["paymentAppInstanceId"] = paymentAppInstanceId.map(JSONValue.string)
        facts["consumerFacingEntityName"] = consumerFacingEntityName.map(JSONValue.string)
        if let info = deviceInfo {
            var device: [String: JSONValue] = [:]
            device["deviceName"] = info.deviceName.map(JSONValue.string)
            device["formFactor"] = info.formFactor.map(JSONValue.string)
            device["osName"] = info.osName.map(JSONValue.string)
            device["osVersion"] = info.osVersion.map(JSONValue.string)
            device["storageTechnology"] = info.storageTechnology.map(JSONValue.string)
            facts["device"] = .object(device)
        }
        if let decisioning = walletProviderDecisioningInfo {
            var wallet: [String: JSONValue] = [:]
            wallet["recommendedDecision"] = decisioning.recommendedDecision.map { .string($0.text) }
            wallet["deviceScore"] = decisioning.deviceScore.map(JSONValue.string)
            wallet["accountScore"] = decisioning.accountScore.map(JSONValue.string)
            wallet["phoneNumberScore"] = decisioning.phoneNumberScore.map(JSONValue.string)
            wallet["accountLifeTime"] = decisioning.accountLifeTime.map(JSONValue.string)
            wallet["recommendationReasons"] = decisioning.recommendationReasons.map { .array($0.map(JSONValue.string)) }
            facts["wallet"] = .object(wallet)
        }
        return facts
    }

    /// The token's `wallet` column: MDES's identifiers of the token's wallet and device.
    public var tokenWalletJSON: String {
        let object = [
            "network": "mdes", "correlationId": correlationId, "tokenType": tokenType.text, "walletId": walletId,
            "paymentAppInstanceId": paymentAppInstanceId, "deviceName": deviceInfo?.deviceName,
        ].compactMapValues { $0 }
        return String(decoding: MDESMessageDecoder.encode(object), as: UTF8.self)
    }
}

extension MDESNotifyServiceActivatedRequest {
    /// What the token's `wallet` column keeps of the activation: the token's last four and expiry
    /// (never the token number), the account suffix, MDES's identifiers.
    public func tokenWalletJSON(tokenData: MDESFundingAccountData.TokenData) -> String {
        let object = [
            "network": "mdes", "correlationId": correlationId, "tokenType": tokenType.text,
            "tokenSuffix": String(tokenData.token.suffix(4)),
            "tokenExpiry": tokenData.expiryMonth + tokenData.expiryYear,
            "accountPanSuffix": accountPanSuffix, "tokenActivatedDateTime": tokenActivatedDateTime,
            "decision": decision.text, "walletId": walletId, "paymentAppInstanceId": paymentAppInstanceId,
            "deviceName": deviceInfo?.deviceName, "formFactor": deviceInfo?.formFactor,
            "secureElementId": secureElementId, "decisionMadeBy": decisionMadeBy,
        ].compactMapValues { $0 }
        return String(decoding: MDESMessageDecoder.encode(object), as: UTF8.self)
    }
}

extension MDESAuthorizeServiceResponse {
    /// The answer as a tree: its sorted compact text is the body ``MDESMessageDecoder/encode(_:)``
    /// would write (absent values left out), and the attempt keeps the tree itself.
    public var tree: JSONValue {
        var members: [String: JSONValue] = [
            "responseId": .string(responseId), "decision": .string(decision.text),
            "services": .array(services.map { .string($0.text) }),
        ]
        members["activationMethods"] = activationMethods.map { methods in
            .array(methods.map { .object(["type": .string($0.type.text), "value": .string($0.value)]) })
        }
        members["encryptedPayload"] = encryptedPayload.map(\.tree)
        members["cvcResponse"] = cvcResponse.map { .string($0.text) }
        return .object(members)
    }
}

extension EncryptedPayload {
    /// The envelope as a tree, absent values left out.
    public var tree: JSONValue {
        var members: [String: JSONValue] = [
            "encryptedData": .string(encryptedData), "encryptedKey": .string(encryptedKey),
            "publicKeyFingerprint": .string(publicKeyFingerprint),
        ]
        members["oaepHashingAlgorithm"] = oaepHashingAlgorithm.map(JSONValue.string)
        members["iv"] = iv.map(JSONValue.string)
        return .object(members)
    }
}
