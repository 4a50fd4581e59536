import Foundation
import IssuerdCrypto
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// In-App Verification over HTTP.
@Suite("In-App Verification")
struct WalletVerificationTests {
    @Test("The caller's pending token is activated with activation data and the TSP activation is queued")
    func verifiesOwnToken() throws {
        let receiver = try WebhookReceiver()
        let app = try StepUpFlowTests.webhookApp(receiver)
        let fixture = try StepUpFixture(app, serialNumber: "SERIAL-1")
        let other = try StepUpFixture(app)
        let token = try app.appToken(customer: fixture.customerID)
        let headers = ["Authorization": "Bearer \(token)"]

        // Another customer's token is indistinguishable from a missing one.
        let foreign = try app.client.postJSON(
            "/v1/wallet/verifications", #"{"tokenReference":"\#(other.tokenReference)"}"#, headers: headers)
        #expect(foreign.status == 404)
        #expect(try app.client.postJSON("/v1/wallet/verifications", "{}", headers: headers).status == 400)
        #expect(try app.client.postJSON("/v1/wallet/verifications", #"{"serialNumber":"SERIAL-1"}"#).status == 401)

        let response = try app.client.postJSON(
            "/v1/wallet/verifications", #"{"serialNumber":"SERIAL-1","passTypeIdentifier":"paymentpass.com.apple"}"#,
            headers: headers)
        #expect(response.status == 200)
        let body = try #require(response.jsonObject())
        #expect(body["status"] as? String == "active")
        #expect(body["tokenReference"] as? String == fixture.tokenReference)
        let activationData = try #require(body["activationData"] as? String)
        #expect(!(try BinaryEncoding.decodeBase64(activationData)).isEmpty)
        #expect(try fixture.tokenStatus(app) == "active")

        let notified = receiver.wait { $0.contains { $0.path == "/tsp" } }
        #expect(notified.first { $0.path == "/tsp" }?.json?["reason"] as? String == "in_app_verification")
        // Already active: nothing left to verify.
        #expect(
            try app.client.postJSON(
                "/v1/wallet/verifications", #"{"tokenReference":"\#(fixture.tokenReference)"}"#, headers: headers
            ).status == 409)
    }

    @Test(
        "A token whose decision did not offer the issuer app is not activated by it (422), nor by app-to-app (declined)"
    )
    func appNotOffered() throws {
        let app = try TestApplication()
        let fixture = try StepUpFixture(app, allowedMethods: ["sms", "email"])
        let headers = ["Authorization": "Bearer \(try app.appToken(customer: fixture.customerID))"]
        let response = try app.client.postJSON(
            "/v1/wallet/verifications", #"{"tokenReference":"\#(fixture.tokenReference)"}"#, headers: headers)
        #expect(response.status == 422)
        #expect(response.errorEnvelope()?["code"] as? String == "activation_method_not_allowed")
        let android = try app.client.postJSON(
            "/v1/cards/\(fixture.cardID)/google-pay/activations",
            #"{"tokenReference":"\#(fixture.tokenReference)"}"#, headers: headers)
        #expect(android.status == 200)
        #expect(android.jsonObject()?["result"] as? String == "declined")
        #expect(android.jsonObject()?["reason"] as? String == "app_not_offered")
        #expect(try fixture.tokenStatus(app) == "pending_verification")
    }

    @Test("In-App Verification is rate limited per customer")
    func rateLimited() throws {
        let app = try TestApplication(environment: ["ISSUERD_IAV_MAX_PER_HOUR": "2"])
        let fixture = try StepUpFixture(app)
        let headers = ["Authorization": "Bearer \(try app.appToken(customer: fixture.customerID))"]
        let statuses = try (0..<3).map { _ in
            try app.client.postJSON("/v1/wallet/verifications", #"{"tokenReference":"unknown"}"#, headers: headers)
                .status
        }
        #expect(statuses == [404, 404, 429])
    }
}
