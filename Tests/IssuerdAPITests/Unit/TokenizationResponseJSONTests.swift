import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdWire
import Testing

@testable import IssuerdAPI

/// The TSP answer and the wallet facts are built as `JSONValue`s directly; they must be what
/// `JSONDecoder` made of `JSONEncoder`'s output before (absent optionals left out, empty arrays
/// kept, quotes and non-ASCII intact), and the answer's bytes what `JSONEncoder` writes.
@Suite struct TokenizationResponseJSONTests {
    static let answers: [TokenizationAuthorizeResponse] = [
        TokenizationAuthorizeResponse(
            decision: "APPROVED", flow: "green", attemptId: "5f0c1e4e-0000-4000-8000-000000000001", reasons: [],
            activationMethods: []),
        TokenizationAuthorizeResponse(
            decision: "REQUIRE_ADDITIONAL_AUTHENTICATION", flow: "yellow", attemptId: "a",
            reasons: [
                Reason(rule: "issuerd.in_app_yellow", reason: "IN_APP_STEP_UP_REQUIRED"),
                Reason(rule: "q\"uote", reason: "한글/\\"),
            ],
            activationMethods: [
                ActivationMethod(id: "sms-1", type: "sms", value: "010-****-5678"),
                ActivationMethod(id: "email-1", type: "email", value: "h********g@example.com"),
                ActivationMethod(id: "app-1", type: "app", value: "issuer app"),
            ]),
    ]

    static let wallets: [WalletSignals] = [
        WalletSignals(),
        WalletSignals(
            deviceScore: 4, accountScore: 5, phoneNumberScore: 1, recommendedDecision: "APPROVED", reasonCodes: [],
            tokenRiskScore: 7),
        WalletSignals(deviceScore: 2, recommendedDecision: "DECLINED", reasonCodes: ["0A", "é\"/"]),
    ]

    @Test(arguments: answers)
    func answerMatchesTheEncoderRoundTrip(answer: TokenizationAuthorizeResponse) throws {
        let encoded = try JSONCoding.encoder.encode(answer)
        #expect(answer.jsonValue == (try JSONCoding.decoder.decode(JSONValue.self, from: encoded)))
        #expect(
            TokenizationAuthorization.httpResponse(answer.jsonValue).body
                == Array(try JSONCoding.encoder.encode(answer.jsonValue)))
        #expect(TokenizationAuthorization.httpResponse(answer.jsonValue).body == Array(encoded))
    }

    @Test(arguments: wallets)
    func walletMatchesTheEncoderRoundTrip(wallet: WalletSignals) throws {
        #expect(
            wallet.jsonValue == (try JSONCoding.decoder.decode(JSONValue.self, from: JSONCoding.encoder.encode(wallet)))
        )
    }
}
