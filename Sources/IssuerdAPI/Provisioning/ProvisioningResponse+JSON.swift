import IssuerdCore
import IssuerdHTTP
import IssuerdWire

extension ProvisioningResponse {
    /// The answer as the JSON `JSONEncoder` would write with ``JSONCoding/encoder`` (sorted keys,
    /// unescaped slashes, absent optionals left out), written directly: the encoder's generic
    /// machinery was 3 % of a provisioning request's CPU. A test holds the two byte for byte.
    var jsonValue: JSONValue {
        var object: [String: JSONValue] = [
            "encryptedPassData": .string(encryptedPassData),
            "activationData": .string(activationData),
            "decision": [
                "flow": .string(decision.flow),
                "attemptId": .string(decision.attemptId),
                "reasons": .array(decision.reasons.map { ["rule": .string($0.rule), "reason": .string($0.reason)] }),
            ],
        ]
        if let ephemeralPublicKey { object["ephemeralPublicKey"] = .string(ephemeralPublicKey) }
        if let wrappedKey { object["wrappedKey"] = .string(wrappedKey) }
        return .object(object)
    }

    /// The 200 answer.
    var httpResponse: HTTPResponse {
        var body: [UInt8] = []
        body.reserveCapacity(1024)
        jsonValue.appendJSON(to: &body, sortedKeys: true)
        return HTTPResponse(status: 200, headers: ["Content-Type": HTTPResponse.jsonContentType], body: body)
    }
}
