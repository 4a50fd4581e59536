import IssuerdCore
import IssuerdHTTP
import IssuerdWire

extension TokenizationAuthorizeRequest {
    /// The request read from a parsed body, or nil for anything its `Decodable` conformance
    /// would refuse or that this does not take (``HTTPRequest/decodeJSON(_:fast:)`` then lets
    /// `JSONDecoder` decode it and say what is wrong), as ``ProvisioningRequest/init(json:)``
    /// does for the in-app body: `JSONDecoder` was 6 % of a TSP authorization's CPU.
    package init?(json: JSONValue) {
        guard case .object(let members) = json,
            case .string(let requestId)? = members["requestId"],
            case .string(let tokenReference)? = members["tokenReference"],
            case .object(let cardFields)? = members["card"],
            case .string(let accountNumber)? = cardFields["accountNumber"],
            case .string(let expiration)? = cardFields["expiration"],
            let tokenRequestorId = JSONValue.optionalString(members["tokenRequestorId"]),
            let tokenizationSource = JSONValue.optionalString(members["tokenizationSource"]),
            let activeTokenCount = JSONValue.optionalInt(members["activeTokenCount"]),
            let device = JSONValue.optionalObject(members["device"], DeviceInfo.init(fields:)),
            let wallet = JSONValue.optionalObject(members["wallet"], WalletSignals.init(fields:))
        else { return nil }
        self.init(
            requestId: requestId, tokenReference: tokenReference, tokenRequestorId: tokenRequestorId,
            tokenizationSource: tokenizationSource,
            card: CardCredentials(accountNumber: accountNumber, expiration: expiration),
            device: device, wallet: wallet, activeTokenCount: activeTokenCount)
    }
}

extension WalletSignals {
    /// As ``TokenizationAuthorizeRequest/init(json:)``: optional integers, strings and a list of strings.
    init?(fields: [String: JSONValue]) {
        guard let deviceScore = JSONValue.optionalInt(fields["deviceScore"]),
            let accountScore = JSONValue.optionalInt(fields["accountScore"]),
            let phoneNumberScore = JSONValue.optionalInt(fields["phoneNumberScore"]),
            let recommendedDecision = JSONValue.optionalString(fields["recommendedDecision"]),
            let tokenRiskScore = JSONValue.optionalInt(fields["tokenRiskScore"])
        else { return nil }
        let reasonCodes: [String]?
        switch fields["reasonCodes"] {
        case nil, .null?: reasonCodes = nil
        case .array(let items)?:
            guard let codes = JSONValue.strings(items) else { return nil }
            reasonCodes = codes
        default: return nil
        }
        self.init(
            deviceScore: deviceScore, accountScore: accountScore, phoneNumberScore: phoneNumberScore,
            recommendedDecision: recommendedDecision, reasonCodes: reasonCodes, tokenRiskScore: tokenRiskScore)
    }
}

extension JSONValue {
    /// An optional integer member as `decodeIfPresent(Int.self)` reads it, for the integers the
    /// parser gives as ``int(_:)``: absent or null is `.some(nil)`, an integer `.some(value)`,
    /// anything else nil (a fraction or an exponent is left to `JSONDecoder`, which decides).
    static func optionalInt(_ value: JSONValue?) -> Int?? {
        switch value {
        case nil, .null?: .some(nil)
        case .int(let number)?: .some(number)
        default: nil
        }
    }
}
