import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The app-to-app yellow path: `POST /v1/cards/{cardId}/google-pay/activations`.
@Suite("Google Pay app-to-app activation")
struct GooglePayActivationTests {
    static func extraText(_ tokenReference: String) -> String {
        Data(#"{"tokenUniqueReference":"\#(tokenReference)","accountPanSuffix":"1234"}"#.utf8).base64EncodedString()
    }

    static func activate(
        _ app: TestApplication, card: String, customer: String, body: String
    ) throws -> TestHTTPResponse {
        try app.client.postJSON(
            "/v1/cards/\(card)/google-pay/activations", body,
            headers: ["Authorization": "Bearer \(try app.appToken(customer: customer))"])
    }

    @Test("EXTRA_TEXT's token is activated once, the TSP activation queued and delivered; then it is declined")
    func approvedOnce() throws {
        let receiver = try WebhookReceiver()
        let app = try StepUpFlowTests.webhookApp(receiver)
        let fixture = try StepUpFixture(app)
        let other = try StepUpFixture(app)
        let body = #"{"extraText":"\#(Self.extraText(fixture.tokenReference))"}"#

        // Another customer's token, or this customer's token under another card: declined.
        let foreign = try Self.activate(
            app, card: fixture.cardID, customer: fixture.customerID,
            body: #"{"extraText":"\#(Self.extraText(other.tokenReference))"}"#)
        #expect(foreign.status == 200)
        #expect(foreign.jsonObject()?["result"] as? String == "declined")
        #expect(foreign.jsonObject()?["reason"] as? String == "token_not_found")
        #expect(
            try Self.activate(app, card: other.cardID, customer: fixture.customerID, body: body).jsonObject()?["result"]
                as? String == "declined")

        let approved = try Self.activate(app, card: fixture.cardID, customer: fixture.customerID, body: body)
        #expect(approved.status == 200, "\(approved.text)")
        #expect(approved.jsonObject()?["result"] as? String == "approved")
        #expect(approved.jsonObject()?["tokenReference"] as? String == fixture.tokenReference)
        #expect(try fixture.tokenStatus(app) == "active")
        #expect(
            try DecisionFixtures.count(
                app,
                "SELECT count(*) FROM audit_log WHERE action = 'token.verified_app_to_app' AND subject = 'token:\(fixture.tokenReference)'"
            ) == 1)

        let notified = receiver.wait { $0.contains { $0.path == "/tsp" } }
        let message = try #require(notified.first { $0.path == "/tsp" })
        #expect(message.json?["action"] as? String == "activate")
        #expect(message.json?["reason"] as? String == "app_to_app")
        #expect(message.json?["tokenReference"] as? String == fixture.tokenReference)
        #expect(try StepUpFlowTests.signatureValid(message, secret: app.tspSecret))

        // Single use: the token no longer awaits verification.
        let again = try Self.activate(app, card: fixture.cardID, customer: fixture.customerID, body: body)
        #expect(again.jsonObject()?["result"] as? String == "declined")
        #expect(again.jsonObject()?["reason"] as? String == "not_awaiting_verification")
    }

    @Test("A malformed EXTRA_TEXT is 400, no credential 401, and the In-App Verification hourly limit is shared")
    func refusals() throws {
        let app = try TestApplication(environment: ["ISSUERD_IAV_MAX_PER_HOUR": "2"])
        let fixture = try StepUpFixture(app)
        let activate = { (body: String) in
            try Self.activate(app, card: fixture.cardID, customer: fixture.customerID, body: body).status
        }
        #expect(try activate(#"{"extraText":"not base64 json!"}"#) == 400)
        #expect(try activate("{}") == 400)
        // Both at once is ambiguous (which token?), whatever the two say.
        #expect(
            try activate(
                #"{"tokenReference":"\#(fixture.tokenReference)","extraText":"\#(Self.extraText(fixture.tokenReference))"}"#
            )
                == 400)
        #expect(
            try app.client.postJSON(
                "/v1/cards/\(fixture.cardID)/google-pay/activations", #"{"tokenReference":"x"}"#
            ).status == 401)
        let headers = ["Authorization": "Bearer \(try app.appToken(customer: fixture.customerID))"]
        #expect(
            try app.client.postJSON("/v1/wallet/verifications", #"{"tokenReference":"unknown"}"#, headers: headers)
                .status == 404)
        #expect(try activate(#"{"tokenReference":"unknown"}"#) == 200)
        #expect(try activate(#"{"tokenReference":"\#(fixture.tokenReference)"}"#) == 429)
        #expect(try fixture.tokenStatus(app) == "pending_verification")
    }
}
