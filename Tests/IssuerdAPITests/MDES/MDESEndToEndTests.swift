import Foundation
import IssuerdCrypto
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The yellow path end to end over real HTTP and PostgreSQL with the outbox dispatcher running:
/// MDES played by the fake MDES (Mastercard's library encrypts its payloads), the cardholder's
/// code read from the notification webhook, and the Customer Service API played by the fake that
/// checks every signature with Mastercard's signer.
@Suite("MDES end to end: yellow, code by webhook, activation, card lost, signed suspend, token updated")
struct MDESEndToEndTests {
    @Test(
        "Authorize yellow → methods → issuer-made code by webhook (re-sent, same code) → wrong, right → active → lost → signed suspend (L) at the Customer Service API → NTU SUSPENDED"
    )
    func yellowToSuspended() throws {
        let receiver = try WebhookReceiver()
        let csapi = try FakeCustomerServiceAPI()
        var environment = StepUpFlowTests.fastOutbox
        environment.merge(csapi.environment) { $1 }
        environment["ISSUERD_NOTIFY_PROVIDER"] = "webhook"
        environment["ISSUERD_NOTIFY_WEBHOOK_URL"] = receiver.url + "/notify"
        environment["ISSUERD_NOTIFY_WEBHOOK_SECRET"] = "notify-secret-0123456789"
        let fixture = try MDESFixture(environment: environment)
        let tur = "DWSPMC00000000032d2f4136a0532fcb2f4136b2f4136a05"
        let core: [String: Any] = [
            "services": ["DIGITIZATION"], "correlationId": "D11112222333", "tokenType": "CLOUD",
            "tokenRequestorId": "50110030273", "fundingAccountInfo": ["tokenUniqueReference": tur],
        ]
        func step(_ op: String, _ body: [String: Any], plaintext: [String: Any]? = nil) throws -> [String: Any] {
            var step: [String: Any] = ["op": op, "body": body]
            if let plaintext { step["plaintext"] = plaintext }
            let answers = try FakeMDESTests.run(fixture, [step])
            let answer = try #require(answers.first)
            #expect(answer["status"] as? Int == 200, "\(op): \(answer)")
            return answer["body"] as? [String: Any] ?? [:]
        }

        let authorized = try step(
            "authorizeService",
            core.merging([
                "requestId": "e2e-as",
                "walletProviderDecisioningInfo": ["recommendedDecision": "REQUIRE_ADDITIONAL_AUTHENTICATION"],
            ]) { $1 }, plaintext: MDESFixture.fundingAccount())
        #expect(authorized["decision"] as? String == "REQUIRE_ADDITIONAL_AUTHENTICATION")
        let methods = try step(
            "requestActivationMethods", core.merging(["requestId": "e2e-ram"]) { $1 },
            plaintext: MDESFixture.fundingAccount())
        let sms = try #require(
            (methods["activationMethods"] as? [[String: String]])?.first { $0["type"] == "TEXT_TO_CARDHOLDER_NUMBER" })
        #expect(sms["value"] == "010-****-5678")

        let deliver: [String: Any] = [
            "tokenUniqueReference": tur, "correlationId": "D11112222333", "activationMethod": sms,
        ]
        _ = try step("deliverActivationCode", deliver.merging(["requestId": "e2e-dac-1"]) { $1 })
        let first = receiver.wait { $0.filter { $0.path == "/notify" }.count >= 1 }.filter { $0.path == "/notify" }
        let message = try #require(first.first?.json)
        let code = try #require(message["code"] as? String)
        #expect(message["destination"] as? String == "01012345678")
        // A Mastercard token may be for any wallet: the text names none (not "Apple Pay").
        let text = try #require(message["message"] as? String)
        #expect(text.contains(code) && !text.contains("Apple Pay"))
        // Only its HMAC is stored.
        #expect(
            try fixture.count(
                "SELECT count(*) FROM challenges WHERE token_reference = '\(tur)' AND code_hmac IS NOT NULL") == 1)
        // A repeated delivery re-sends the same code with the same expiry; no second challenge.
        _ = try step("deliverActivationCode", deliver.merging(["requestId": "e2e-dac-2"]) { $1 })
        let both = receiver.wait { $0.filter { $0.path == "/notify" }.count >= 2 }.filter { $0.path == "/notify" }
        try #require(both.count == 2)
        #expect(both[1].json?["code"] as? String == code)
        // The re-sent text states the time left (the same expiry), and names no wallet either.
        let resent = try #require(both[1].json?["message"] as? String)
        #expect(resent.contains(code) && !resent.contains("Apple Pay"))
        #expect(both[1].json?["expiresAt"] as? String == message["expiresAt"] as? String)
        #expect(both[1].header("Idempotency-Key") != both[0].header("Idempotency-Key"))
        #expect(try fixture.count("SELECT count(*) FROM challenges WHERE token_reference = '\(tur)'") == 1)

        let wrong = code == "000000" ? "111111" : "000000"
        let validate: [String: Any] = ["tokenUniqueReference": tur, "correlationId": "D11112222333"]
        #expect(
            try step(
                "validateActivationCode", validate.merging(["requestId": "e2e-vac-1", "activationCode": wrong]) { $1 })[
                    "result"] as? String == "INCORRECT_CODE")
        #expect(
            try step(
                "validateActivationCode", validate.merging(["requestId": "e2e-vac-2", "activationCode": code]) { $1 })[
                    "result"] as? String == "SUCCESS")

        let now = MDESFixture.dateTime(Date())
        _ = try step(
            "notifyServiceActivated",
            core.merging([
                "requestId": "e2e-nsa", "accountPanSuffix": "9999", "decision": "REQUIRE_ADDITIONAL_AUTHENTICATION",
                "serviceRequestDateTime": now, "tokenActivatedDateTime": now,
            ]) { $1 }, plaintext: MDESFixture.fundingAccount(token: "5204731600014792"))
        #expect(
            try fixture.count("SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND status = 'active'") == 1
        )
        // MDES completed this provisioning itself: nothing goes to its Customer Service API or a TSP.
        #expect(try fixture.count("SELECT count(*) FROM outbox WHERE kind IN ('mdes_csapi', 'tsp')") == 0)

        // The card is reported lost: issuerd suspends the token and tells Mastercard.
        let key = try fixture.app.apiKey(role: .admin)
        let lost = try fixture.app.client.postJSON(
            "/v1/admin/cards/card-1/status", #"{"status":"lost","reason":"cardholder call"}"#,
            headers: ["Authorization": "Bearer \(key)"])
        #expect(lost.status == 200, "\(lost.text)")
        #expect(
            try fixture.count("SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND status = 'suspended'")
                == 1)
        // The suspend reaches the Customer Service API through the outbox, signed (the fake
        // verified the OAuth signature and body hash with Mastercard's signer), reason L.
        let seen = try csapi.wait { $0.count >= 1 }
        try #require(seen.count == 1, "\(seen)")
        #expect(seen[0]["operation"] as? String == "suspend")
        #expect(seen[0]["path"] as? String == "/mdes/csapi/v2/token/suspend")
        CustomerServiceOutboxTests.expectSignedAndValid(seen[0])
        #expect(seen[0].csapiRequest?["TokenUniqueReference"] as? String == tur)
        #expect(seen[0].csapiRequest?["ReasonCode"] as? String == "L")
        #expect(
            try CustomerServiceOutboxTests.waitFor {
                try CustomerServiceOutboxTests.outbox(fixture.app, kind: "mdes_csapi").map(\.status) == ["delivered"]
            })

        // MDES confirms with Notify Token Updated.
        _ = try step(
            "notifyTokenUpdated",
            [
                "requestId": "e2e-ntu", "reasonCode": "STATUS_UPDATE",
                "tokens": [["tokenUniqueReference": tur, "status": "SUSPENDED", "suspendedBy": ["ISSUER"]]],
            ])
        #expect(
            try fixture.count("SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND status = 'suspended'")
                == 1)
        #expect(
            try fixture.count(
                "SELECT count(*) FROM audit_log WHERE action = 'token.updated' AND subject = 'token:\(tur)' AND details::jsonb ->> 'suspendedBy' = 'ISSUER'"
            )
                == 1)
        // Its history: created by the yellow Authorize Service, activated by the right code,
        // suspended by the issuer; MDES's activation and confirmation add nothing (no change).
        let events = try fixture.app.pool.withConnection { connection in
            try connection.query(
                "SELECT event, source FROM token_events WHERE token_reference = \(tur) ORDER BY at, recorded_at"
            ).map { "\(try $0.decode("event", as: String.self))/\(try $0.decode("source", as: String.self))" }
        }
        #expect(events == ["created/mdes", "activated/issuer", "suspended/issuer"])
        #expect(try csapi.requests().count == 1)
    }
}
