import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The app-to-app path for a Mastercard token as it happens in reality: MDES's Authorize
/// Service (the fake MDES, payloads made by Mastercard's library) leaves the token yellow, Google
/// Wallet opens the issuer's app, and the app's activation reaches Mastercard's Customer Service API
/// (the fake that checks every signature with Mastercard's signer) through the outbox.
@Suite("Google Pay app-to-app activation of a Mastercard token")
struct GooglePayMastercardActivationTests {
    @Test(
        "A yellow MDES token activated by the app-to-app path: a signed Customer Service API activate (A), no TSP message"
    )
    func activatesThroughCustomerServiceAPI() throws {
        let csapi = try FakeCustomerServiceAPI()
        var environment = StepUpFlowTests.fastOutbox
        environment.merge(csapi.environment) { $1 }
        let fixture = try MDESFixture(environment: environment)
        let tur = CustomerServiceOutboxTests.tokenUniqueReference()
        let answers = try FakeMDESTests.run(
            fixture,
            [
                [
                    "op": "authorizeService",
                    "body": [
                        "requestId": "gpay-as", "services": ["DIGITIZATION"], "correlationId": "D20000000035",
                        "tokenType": "CLOUD", "tokenRequestorId": "50120834693", "walletId": "216",
                        "fundingAccountInfo": ["tokenUniqueReference": tur],
                        "walletProviderDecisioningInfo": ["recommendedDecision": "REQUIRE_ADDITIONAL_AUTHENTICATION"],
                    ],
                    "plaintext": MDESFixture.fundingAccount(),
                ]
            ])
        let authorized = try #require(answers.first?["body"] as? [String: Any])
        #expect(authorized["decision"] as? String == "REQUIRE_ADDITIONAL_AUTHENTICATION", "\(authorized)")
        #expect(
            try fixture.count(
                "SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND service = 'mdes' AND status = 'pending_verification'"
            ) == 1)

        // Google Wallet hands the app EXTRA_TEXT naming the token; the app has authenticated the
        // cardholder and asks issuerd to activate it.
        let approved = try GooglePayActivationTests.activate(
            fixture.app, card: "card-1", customer: "cust-1",
            body: #"{"extraText":"\#(GooglePayActivationTests.extraText(tur))"}"#)
        #expect(approved.status == 200, "\(approved.text)")
        #expect(approved.jsonObject()?["result"] as? String == "approved")
        #expect(approved.jsonObject()?["tokenReference"] as? String == tur)
        #expect(
            try fixture.count("SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND status = 'active'") == 1
        )

        let seen = try csapi.wait { $0.count >= 1 }
        try #require(seen.count == 1, "\(seen)")
        #expect(seen[0]["operation"] as? String == "activate")
        #expect(seen[0]["path"] as? String == "/mdes/csapi/v2/token/activate")
        CustomerServiceOutboxTests.expectSignedAndValid(seen[0])
        #expect(seen[0].csapiRequest?["TokenUniqueReference"] as? String == tur)
        #expect(seen[0].csapiRequest?["ReasonCode"] as? String == "A")
        #expect(
            try CustomerServiceOutboxTests.waitFor {
                try CustomerServiceOutboxTests.outbox(fixture.app, kind: "mdes_csapi").map(\.status) == ["delivered"]
            })
        // A Mastercard token is not announced to the generic TSP.
        #expect(try fixture.count("SELECT count(*) FROM outbox WHERE kind = 'tsp'") == 0)

        // Single use: a second call is declined and sends nothing more.
        let again = try GooglePayActivationTests.activate(
            fixture.app, card: "card-1", customer: "cust-1", body: #"{"tokenReference":"\#(tur)"}"#)
        #expect(again.jsonObject()?["result"] as? String == "declined")
        #expect(try csapi.requests().count == 1)
    }
}
