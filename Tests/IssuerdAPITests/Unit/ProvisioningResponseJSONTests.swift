import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdWire
import Testing

@testable import IssuerdAPI

/// The direct writer of the provisioning answer must produce exactly what `JSONEncoder` with the
/// API's settings produces, for both schemes, with and without reasons, and with characters a
/// writer could get wrong (slashes in base64, quotes and non-ASCII in reasons).
@Suite struct ProvisioningResponseJSONTests {
    static let samples: [ProvisioningResponse] = [
        ProvisioningResponse(
            encryptedPassData: "q83v/+Eg==", activationData: "AAEC/w==", ephemeralPublicKey: "BPq/7w==",
            wrappedKey: nil,
            decision: Decision(flow: "green", attemptId: "5f0c1e4e-0000-4000-8000-000000000001", reasons: [])),
        ProvisioningResponse(
            encryptedPassData: "x", activationData: "y", ephemeralPublicKey: nil, wrappedKey: "w/r+k=",
            decision: Decision(
                flow: "yellow", attemptId: "a",
                reasons: [
                    Reason(rule: "wallet.low_device_score", reason: "DEVICE_SCORE"),
                    Reason(rule: "q\"uote", reason: "한글/\\"),
                ])),
    ]

    @Test(arguments: samples)
    func matchesJSONEncoderByteForByte(response: ProvisioningResponse) throws {
        let encoded = Array(try JSONCoding.encoder.encode(response))
        #expect(response.httpResponse.body == encoded, "\(String(decoding: response.httpResponse.body, as: UTF8.self))")
        #expect(response.httpResponse.status == 200)
        #expect(
            try JSONCoding.decoder.decode(ProvisioningResponse.self, from: Data(response.httpResponse.body)) == response
        )
    }
}
