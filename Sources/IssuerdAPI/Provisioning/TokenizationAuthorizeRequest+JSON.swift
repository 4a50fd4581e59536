import IssuerdHTTP
import IssuerdWire

extension TokenizationAuthorizeRequest {
    /// The request read from a parsed body, or nil for anything its `Decodable` conformance
    /// would refuse or that this does not take (``HTTPRequest/decodeJSON(_:fast:)`` then lets
    /// `JSONDecoder` decode it and say what is wrong), as ``ProvisioningRequest/init(json:)``
    /// does for the in-app body: `JSONDecoder` was 6 % of a TSP authorization's CPU.
    init?(json: JSONValue) {
        guard case .object(let members) = json,
            case .string(let requestId)? = members["requestId"],
            case .string(let tokenReference)? = members["tokenReference"],
            case .object(let cardFields)? = members["card"],
            case .string(let accountNumber)? = cardFields["accountNumber"],
            case .string(let expiration)? = cardFields["expiration"],
            let tokenRequestorId = JSONValue.optionalString(members["tokenRequestorId"]),
            let tokenizationSource = JSONValue.optionalString(members["tokenizationSource"]),
            let activeTokenCount = JSONValue.optionalInt(members["activeTokenCount"])
        else { return nil }
        var device: DeviceInfo?
        switch members["device"] {
        case nil, .null?: device = nil
        case .object(let fields)?:
            guard let parsed = DeviceInfo(fields: fields) else { return nil }
            device = parsed
        default: return nil
        }
        var wallet: WalletSignals?
        switch members["wallet"] {
        case nil, .null?: wallet = nil
        case .object(let fields)?:
            guard let parsed = WalletSignals(fields: fields) else { return nil }
            wallet = parsed
        default: return nil
        }
        self.init(
            requestId: requestId, tokenReference: tokenReference, tokenRequestorId: tokenRequestorId,
            tokenizationSource: tokenizationSource, card: CardCredentials(accountNumber: accountNumber, expiration: expiration),
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
        var reasonCodes: [String]?
        switch fields["reasonCodes"] {
        case nil, .null?: reasonCodes = nil
        case .array(let items)?:
            var codes: [String] = []
            codes.reserveCapacity(items.count)
            for item in items {
                guard case .string(let code) = item else { return nil }
                codes.append(code)
            }
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
