import Foundation
import IssuerdCrypto
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// `POST /v1/cards/{cardId}/google-pay/push-provisioning` over HTTP against PostgreSQL: what the
/// Android app hands `pushTokenize`, opened by independent implementations.
@Suite("Google Pay push provisioning")
struct GooglePayPushTests {
    static let session = "0f8fad5b-d9cb-469f-a165-70867728950e"

    static func app(pgp: [String: [String: String]]?) throws -> TestApplication {
        let files = try TestScratch.directory("issuerd-google-pay")
        return try TestApplication(
            environment: try GooglePayFixtures.environment(directory: files, pgp: pgp),
            rulesDirectory: try GooglePayFixtures.rules())
    }

    static func push(
        _ app: TestApplication, card: String, customer: String, device: [String: Any], session: String? = nil,
        headers: [String: String] = [:]
    ) throws -> TestHTTPResponse {
        var body: [String: Any] = ["device": device]
        if let session { body["serverSessionId"] = session }
        return try GooglePayFixtures.post(
            app, "google-pay/push-provisioning", card: card, customer: customer, body: body, headers: headers)
    }

    static var phone: [String: Any] {
        ["id": "pixel-1", "type": "phone", "locale": "ko_KR", "ipAddress": "203.0.113.7"]
    }

    @Test(
        "A green push answers the Mastercard opaque card, which Mastercard's library opens and whose TAV verifies, and Google's, which PGPy opens and verifies"
    )
    func greenPush() throws {
        let keys = try GooglePayFixtures.openPGPKeys()
        let app = try Self.app(pgp: keys)
        try GooglePayFixtures.cardholder(app, network: "mastercard")

        let started = Date()
        let response = try Self.push(
            app, card: "card-mc", customer: "cust-1", device: Self.phone, session: Self.session,
            headers: ["Idempotency-Key": "gpay-1"])
        #expect(response.status == 200, "\(response.text)")
        let body = try #require(response.jsonObject())
        #expect((body["decision"] as? [String: Any])?["flow"] as? String == "green")
        #expect(body["stepUpMethods"] == nil)
        #expect(body["tokenServiceProvider"] as? String == "mastercard")
        #expect(body["network"] as? String == "mastercard")
        #expect(body["lastDigits"] as? String == "9999")
        #expect(body["displayName"] as? String == "Mastercard •••• 9999")
        let address = try #require(body["userAddress"] as? [String: Any])
        #expect(address["name"] as? String == "HONG GILDONG")
        #expect(address["countryCode"] as? String == "KR")
        #expect(address["phoneNumber"] as? String == "01012345678")
        #expect(!response.text.contains(DecisionFixtures.mastercardPAN))

        // Mastercard's opaque card: the card data opened by Mastercard's library, the TAV checked.
        let opened = try GooglePayFixtures.openMastercard(app, try #require(body["opaquePaymentCard"] as? String))
        let plaintext = try #require(opened["plaintext"] as? [String: Any])
        let card = try #require(plaintext["cardAccountData"] as? [String: Any])
        #expect(card["accountNumber"] as? String == DecisionFixtures.mastercardPAN)
        #expect(card["expiryMonth"] as? String == "07")
        #expect(card["expiryYear"] as? String == "31")
        #expect((plaintext["accountHolderData"] as? [String: Any])?["accountHolderName"] as? String == "HONG GILDONG")
        #expect(plaintext["source"] as? String == "ACCOUNT_ADDED_VIA_APPLICATION")
        let tav = try #require(opened["tav"] as? [String: Any])
        #expect(tav["version"] as? String == "3")
        #expect(plaintext["dataValidUntilTimestamp"] as? String == tav["dataValidUntilTimestamp"] as? String)
        #expect(opened["tavValid"] as? Bool == true)
        let validUntil = try #require(
            ISO8601DateFormatter().date(from: tav["dataValidUntilTimestamp"] as? String ?? ""))
        #expect(validUntil > started && validUntil < started.addingTimeInterval(31 * 60))
        let envelope = try #require(opened["envelope"] as? [String: Any])
        let payload = try #require(
            (envelope["fundingAccountInfo"] as? [String: Any])?["encryptedPayload"] as? [String: Any])
        #expect(payload["oaepHashingAlgorithm"] as? String == "SHA256")
        #expect((payload["publicKeyFingerprint"] as? String)?.count == 40)

        // Google's opaque card: PGPy decrypts it with Google's key and verifies the issuer's signature.
        let google = try GooglePayFixtures.openGoogle(
            try #require(body["googleOpaquePaymentCard"] as? String), keys: keys)
        #expect(google["signatureValid"] as? Bool == true)
        let clear = try #require((google["plaintext"] as? String)?.data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: clear) as? [String: Any])
        #expect((object["validationContext"] as? [String: Any])?["serverSessionId"] as? String == Self.session)
        #expect(
            (object["paymentCard"] as? [String: Any])?["accountNumber"] as? String == DecisionFixtures.mastercardPAN)

        // Recorded as a google_pay attempt; the same Idempotency-Key answers the same body.
        let attemptID = try #require(body["attemptId"] as? String)
        #expect(
            try DecisionFixtures.count(
                app,
                "SELECT count(*) FROM provisioning_attempts WHERE attempt_id = '\(attemptID)' AND channel = 'google_pay' AND decision = 'APPROVED'"
            ) == 1)
        let again = try Self.push(
            app, card: "card-mc", customer: "cust-1", device: Self.phone, session: Self.session,
            headers: ["Idempotency-Key": "gpay-1"])
        #expect(again.status == 200 && again.text == response.text)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 1)
    }

    @Test("A yellow push still answers the opaque card, with the allowed methods; no serverSessionId, no Google object")
    func yellowPush() throws {
        let app = try Self.app(pgp: nil)
        try GooglePayFixtures.cardholder(app, network: "mastercard")
        let response = try Self.push(
            app, card: "card-mc", customer: "cust-1", device: ["id": "watch-1", "type": "watch"], session: Self.session)
        #expect(response.status == 200, "\(response.text)")
        let body = try #require(response.jsonObject())
        let decision = try #require(body["decision"] as? [String: Any])
        #expect(decision["flow"] as? String == "yellow")
        #expect((decision["reasons"] as? [[String: Any]])?.first?["rule"] as? String == "test.google_watch")
        #expect(Set(body["stepUpMethods"] as? [String] ?? []) == ["sms", "app"])
        // Without the OpenPGP keys there is no Google object, whatever the app sent.
        #expect(body["googleOpaquePaymentCard"] == nil)
        let opened = try GooglePayFixtures.openMastercard(app, try #require(body["opaquePaymentCard"] as? String))
        #expect(opened["tavValid"] as? Bool == true)
        #expect(
            try DecisionFixtures.count(
                app,
                "SELECT count(*) FROM provisioning_attempts WHERE channel = 'google_pay' AND flow = 'yellow' AND decision = 'REQUIRE_ADDITIONAL_AUTHENTICATION'"
            ) == 1)
    }

    @Test(
        "Orange is 403 provisioning_declined and recorded; Visa is 422 visa_push_not_configured; another customer's card is 404"
    )
    func refusals() throws {
        let app = try Self.app(pgp: nil)
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.customer(app, "cust-2")
        try DecisionFixtures.card(
            app, "card-blocked", customer: "cust-1", pan: DecisionFixtures.mastercardPAN, network: "mastercard",
            status: .blocked)
        try DecisionFixtures.card(app, "card-visa", customer: "cust-1")
        try DecisionFixtures.card(
            app, "card-other", customer: "cust-2", pan: "5555555555554444", network: "mastercard")

        let orange = try Self.push(app, card: "card-blocked", customer: "cust-1", device: Self.phone)
        #expect(orange.status == 403)
        let error = try #require(orange.jsonObject()?["error"] as? [String: Any])
        #expect(error["code"] as? String == "provisioning_declined")
        #expect(error["flow"] as? String == "orange")
        #expect(
            try DecisionFixtures.count(
                app,
                "SELECT count(*) FROM provisioning_attempts WHERE channel = 'google_pay' AND flow = 'orange' AND decision = 'DECLINED'"
            ) == 1)

        let visa = try Self.push(app, card: "card-visa", customer: "cust-1", device: Self.phone)
        #expect(visa.status == 422)
        #expect((visa.jsonObject()?["error"] as? [String: Any])?["code"] as? String == "visa_push_not_configured")

        let foreign = try Self.push(app, card: "card-other", customer: "cust-1", device: Self.phone)
        #expect(foreign.status == 404)
        #expect((foreign.jsonObject()?["error"] as? [String: Any])?["code"] as? String == "card_not_found")
        // A bad body on another customer's card is 404 too; on one's own, 400.
        #expect(try Self.push(app, card: "card-other", customer: "cust-1", device: ["type": "toaster"]).status == 404)
        #expect(try Self.push(app, card: "card-visa", customer: "cust-1", device: ["type": "toaster"]).status == 400)
        #expect(
            try app.client.postJSON("/v1/cards/card-visa/google-pay/push-provisioning", #"{"device":{}}"#).status
                == 401)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 1)
    }

    @Test("Without Mastercard's certificate a Mastercard push is 422 mastercard_push_not_configured")
    func mastercardNotConfigured() throws {
        let app = try TestApplication()
        try GooglePayFixtures.cardholder(app, network: "mastercard")
        let response = try Self.push(app, card: "card-mc", customer: "cust-1", device: Self.phone)
        #expect(response.status == 422)
        #expect(
            (response.jsonObject()?["error"] as? [String: Any])?["code"] as? String == "mastercard_push_not_configured")
    }
}
