import Foundation
import IssuerdWire
import Testing

/// The provisioning messages' JSON names are the contract's (docs/openapi.yaml), which the
/// server and the issuer app both compile against: a renamed property must fail here, not in an
/// app in the field.
@Suite("Provisioning wire types: the contract's field names, absent optionals, unknown fields ignored")
struct ProvisioningWireTests {
    private func keys(_ value: some Encodable) throws -> Set<String> {
        let object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any]
        return Set(try #require(object).keys)
    }

    @Test("An ECC_V2 answer names its fields as the contract does, and leaves wrappedKey out")
    func responseNames() throws {
        let response = ProvisioningResponse(
            encryptedPassData: "cGFzcw==", activationData: "YWN0", ephemeralPublicKey: "BA==", wrappedKey: nil,
            decision: Decision(flow: "green", attemptId: "a-1", reasons: [Reason(rule: "r", reason: "R")]))
        #expect(try keys(response) == ["encryptedPassData", "activationData", "ephemeralPublicKey", "decision"])
        #expect(try keys(response.decision) == ["flow", "attemptId", "reasons"])
        #expect(try keys(Reason(rule: "r", reason: "R")) == ["rule", "reason"])
        let decoded = try JSONDecoder().decode(ProvisioningResponse.self, from: try JSONEncoder().encode(response))
        #expect(decoded == response)
    }

    @Test("A request from a newer app with fields this version does not know still decodes")
    func requestToleratesUnknownFields() throws {
        let json = #"""
            {"certificates":["MIIB","MIIC"],"nonce":"bm9uY2U=","nonceSignature":"c2ln","encryptionScheme":"ECC_V2",
             "device":{"id":"d-1","osVersion":"18.2","futureSignal":true},"somethingNew":{"a":1}}
            """#
        let request = try JSONDecoder().decode(ProvisioningRequest.self, from: Data(json.utf8))
        #expect(request.certificates == ["MIIB", "MIIC"])
        #expect(request.encryptionScheme == "ECC_V2")
        #expect(request.device?.id == "d-1" && request.device?.osVersion == "18.2")
        #expect(request.channel == nil)
    }

    @Test("A request without a required field does not decode")
    func requestRequiresItsFields() {
        for missing in ["certificates", "nonce", "nonceSignature"] {
            var object: [String: Any] = ["certificates": ["MIIB"], "nonce": "bg==", "nonceSignature": "cw=="]
            object[missing] = nil
            let data = try! JSONSerialization.data(withJSONObject: object)
            #expect(throws: DecodingError.self, "without \(missing)") {
                try JSONDecoder().decode(ProvisioningRequest.self, from: data)
            }
        }
    }
}
