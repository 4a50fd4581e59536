import Foundation

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
    /// What an attempt keeps of the request for `explain` and the console, as JSON: never card data.
    public func factsJSON(lastFour: String) -> Data {
        struct Facts: Encodable {
            var channel = "mdes"
            var lastFour: String
            var correlationId: String
            var tokenType: String
            var walletId, accountIdHash, activeTokenCount, paymentAppInstanceId, consumerFacingEntityName: String?
            var device: [String: String]?
            var wallet: Wallet?
        }
        struct Wallet: Encodable {
            var recommendedDecision, deviceScore, accountScore, phoneNumberScore, accountLifeTime: String?
            var recommendationReasons: [String]?
        }
        let device = deviceInfo.map { info in
            [
                "deviceName": info.deviceName, "formFactor": info.formFactor, "osName": info.osName,
                "osVersion": info.osVersion, "storageTechnology": info.storageTechnology,
            ].compactMapValues { $0 }
        }
        let wallet = walletProviderDecisioningInfo.map {
            Wallet(
                recommendedDecision: $0.recommendedDecision?.text, deviceScore: $0.deviceScore,
                accountScore: $0.accountScore, phoneNumberScore: $0.phoneNumberScore,
                accountLifeTime: $0.accountLifeTime, recommendationReasons: $0.recommendationReasons)
        }
        return MDESMessageDecoder.encode(
            Facts(
                lastFour: lastFour, correlationId: correlationId, tokenType: tokenType.text, walletId: walletId,
                accountIdHash: accountIdHash, activeTokenCount: activeTokenCount,
                paymentAppInstanceId: paymentAppInstanceId, consumerFacingEntityName: consumerFacingEntityName,
                device: device, wallet: wallet))
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
