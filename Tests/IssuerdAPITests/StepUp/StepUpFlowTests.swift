import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Step-up over HTTP against a real PostgreSQL: codes, verification, delivery, notifications.
@Suite("Step-up challenges and verification")
struct StepUpFlowTests {
    static let fastOutbox = [
        "ISSUERD_OUTBOX_POLL_INTERVAL": "20ms", "ISSUERD_OUTBOX_BACKOFF_BASE": "50ms",
        "ISSUERD_OUTBOX_BACKOFF_MAX": "200ms",
    ]

    static func webhookApp(
        _ receiver: WebhookReceiver, extra: [String: String] = [:], logger: Logger? = nil
    ) throws -> TestApplication {
        var environment = fastOutbox
        environment["ISSUERD_NOTIFY_PROVIDER"] = "webhook"
        environment["ISSUERD_NOTIFY_WEBHOOK_URL"] = receiver.url + "/notify"
        environment["ISSUERD_NOTIFY_WEBHOOK_SECRET"] = "notify-secret-0123456789"
        environment["ISSUERD_TSP_WEBHOOK_URL"] = receiver.url + "/tsp"
        environment.merge(extra) { $1 }
        return try TestApplication(environment: environment, logger: logger)
    }

    /// Checks `X-Issuerd-Signature` of a received webhook against `secret`.
    static func signatureValid(_ message: WebhookReceiver.Received, secret: String) throws -> Bool {
        let header = try #require(message.header("X-Issuerd-Signature"))
        let parsed = try #require(TSPSignature(header: header))
        return try TSPAuthenticator.sign(body: message.body, secret: secret, timestamp: parsed.timestamp) == header
    }

    @Test(
        "Yellow flow: code delivered by a signed webhook, verified, token active, TSP activation signed and delivered")
    func yellowFlow() throws {
        let receiver = try WebhookReceiver()
        let app = try Self.webhookApp(receiver)
        let fixture = try StepUpFixture(app)

        let created = try fixture.requestCode(app)
        #expect(created.status == 201)
        let challenge = try #require(created.jsonObject())
        let challengeID = try #require(challenge["challengeId"] as? String)
        #expect(challenge["method"] as? String == "sms")
        #expect(challenge["expiresAt"] as? String != nil)

        let delivered = receiver.wait { $0.contains { $0.path == "/notify" } }
        let message = try #require(delivered.first { $0.path == "/notify" })
        #expect(try Self.signatureValid(message, secret: "notify-secret-0123456789"))
        #expect(message.header("Idempotency-Key") == "notify:\(challengeID)")
        let body = try #require(message.json)
        #expect(body["challengeId"] as? String == challengeID)
        #expect(body["method"] as? String == "sms")
        #expect(body["destination"] as? String == fixture.phone)
        let code = try #require(body["code"] as? String)
        #expect(OneTimeCode.isWellFormed(code))
        let text = try #require(body["message"] as? String)
        #expect(text.contains(code) && text.contains("Never share"))  // attempt locale en_US
        #expect(text.contains("Apple Pay"))

        // Neither the code nor the phone number sits in clear in the database.
        let stored = try app.pool.withConnection { connection in
            try connection.query("SELECT payload::text AS p FROM outbox WHERE kind = 'notify'").map {
                try $0.decode("p", as: String.self)
            }
        }
        #expect(stored.count == 1)
        #expect(!stored[0].contains(code) && !stored[0].contains("1234-5678") && stored[0].contains("010-****-5678"))

        let verified = try fixture.verify(app, code: code)
        #expect(verified.status == 200)
        #expect(verified.jsonObject()?["result"] as? String == "verified")
        #expect(try fixture.tokenStatus(app) == "active")

        let notified = receiver.wait { $0.contains { $0.path == "/tsp" } }
        let activation = try #require(notified.first { $0.path == "/tsp" })
        #expect(try Self.signatureValid(activation, secret: app.tspSecret))
        #expect(activation.json?["action"] as? String == "activate")
        #expect(activation.json?["tokenReference"] as? String == fixture.tokenReference)
        #expect(activation.header("Idempotency-Key") == "tsp:activate:\(fixture.tokenReference):\(challengeID)")

        let (events, audits) = try app.pool.withConnection { connection in
            (
                try connection.query(
                    "SELECT count(*)::bigint AS n FROM token_events WHERE token_reference = \(fixture.tokenReference) AND event = 'activated'"
                )
                .first!.decode("n", as: Int64.self),
                try connection.query("SELECT count(*)::bigint AS n FROM audit_log WHERE action = 'challenge.verified'")
                    .first!.decode("n", as: Int64.self)
            )
        }
        #expect(events == 1 && audits == 1)
        // A used code does not verify again.
        #expect(try fixture.verify(app, code: code, padding: 1).status == 409)
    }

    @Test("A code request's idempotent answer commits with its challenge; the retry replays it, no second code is sent")
    func codeRequestAnswerCommitsWithTheChallenge() throws {
        let app = try TestApplication(environment: Self.fastOutbox)
        let fixture = try StepUpFixture(app)
        let body = #"{"tokenReference":"\#(fixture.tokenReference)","activationMethodId":"sms-1"}"#
        let first = try app.postAsTSP("/v1/tsp/activation-codes", body, headers: ["Idempotency-Key": "code-1"])
        #expect(first.status == 201)
        let together = try DecisionFixtures.count(
            app,
            "SELECT count(*) FROM idempotency_keys k, challenges c WHERE k.key = 'code-1' AND k.status = 201 AND k.xmin = c.xmin"
        )
        #expect(together == 1)
        Thread.sleep(forTimeInterval: 1.05)  // a new second: a new signature for the same body
        let again = try app.postAsTSP("/v1/tsp/activation-codes", body, headers: ["Idempotency-Key": "code-1"])
        #expect(again.status == 201)
        #expect(again.body == first.body)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM challenges") == 1)
    }

    @Test("Five wrong codes lock the challenge; every failure is recorded for the velocity rules")
    func wrongCodesLock() throws {
        let app = try TestApplication(environment: Self.fastOutbox)
        let fixture = try StepUpFixture(app)
        let created = try fixture.requestCode(app, method: "email-1")
        #expect(created.status == 201)
        let challengeID = try #require(created.jsonObject()?["challengeId"] as? String)
        let code = try #require(StepUpFixture.loggedCode(app, challengeID: challengeID))
        let wrong = code == "000000" ? "000001" : "000000"

        var results: [(String?, Int?)] = []
        for attempt in 0..<5 {
            let response = try fixture.verify(app, code: wrong, padding: attempt)
            #expect(response.status == 200)
            results.append(
                (response.jsonObject()?["result"] as? String, response.jsonObject()?["attemptsRemaining"] as? Int))
        }
        #expect(results.map(\.0) == ["invalid", "invalid", "invalid", "invalid", "locked"])
        #expect(results.map(\.1) == [4, 3, 2, 1, 0])
        // Locked means locked: even the right code is refused now.
        #expect(try fixture.verify(app, code: code, padding: 9).jsonObject()?["result"] as? String == "locked")
        #expect(try fixture.tokenStatus(app) == "pending_verification")
        let kinds = try app.pool.withConnection { connection in
            try connection.query("SELECT kind FROM challenge_failures WHERE card_id = \(fixture.cardID) ORDER BY id")
                .map { try $0.decode("kind", as: String.self) }
        }
        #expect(kinds == ["wrong_code", "wrong_code", "wrong_code", "wrong_code", "wrong_code", "locked"])
    }

    @Test("An expired code answers expired and is recorded as a failure")
    func expiredCode() throws {
        let app = try TestApplication(environment: Self.fastOutbox)
        let fixture = try StepUpFixture(app)
        let created = try fixture.requestCode(app, method: "ars-1")
        let challengeID = try #require(created.jsonObject()?["challengeId"] as? String)
        let code = try #require(StepUpFixture.loggedCode(app, challengeID: challengeID))
        try app.pool.withConnection { connection in
            _ = try connection.execute(
                "UPDATE challenges SET expires_at = now() - interval '1 second' WHERE token_reference = \(fixture.tokenReference)"
            )
        }
        let response = try fixture.verify(app, code: code)
        #expect(response.jsonObject()?["result"] as? String == "expired")
        #expect(try fixture.tokenStatus(app) == "pending_verification")
        let kinds = try app.pool.withConnection { connection in
            try connection.query("SELECT kind FROM challenge_failures WHERE card_id = \(fixture.cardID)").map {
                try $0.decode("kind", as: String.self)
            }
        }
        #expect(kinds == ["expired"])
    }

    @Test("Twenty concurrent verifications of one correct code: exactly one verified")
    func concurrentVerification() throws {
        let app = try TestApplication(environment: Self.fastOutbox)
        let fixture = try StepUpFixture(app)
        let challengeID = try #require(try fixture.requestCode(app).jsonObject()?["challengeId"] as? String)
        let code = try #require(StepUpFixture.loggedCode(app, challengeID: challengeID))
        let requests = try (0..<20).map { index in
            let body = fixture.verifyBody(code: code, padding: index)
            return HTTPTestClient.Request(
                "POST", "/v1/tsp/activation-codes/verify",
                headers: ["Content-Type": "application/json", "X-Issuerd-Signature": try app.tspSignature(body)],
                body: Array(body.utf8))
        }
        let responses = try app.client.sendConcurrently(requests).map { try $0.get() }
        let verified = responses.filter { $0.status == 200 && $0.jsonObject()?["result"] as? String == "verified" }
        #expect(verified.count == 1)
        #expect(responses.allSatisfy { $0.status == 200 || $0.status == 409 })
        let activations = try app.pool.withConnection { connection in
            try connection.query("SELECT count(*)::bigint AS n FROM outbox WHERE kind = 'tsp'").first!.decode(
                "n", as: Int64.self)
        }
        #expect(activations == 1)
    }

    @Test("Method restrictions, unknown methods, state and the hourly send limit")
    func refusals() throws {
        let app = try TestApplication(environment: Self.fastOutbox)
        // The rules removed SMS and ARS (phone changed recently).
        let restricted = try StepUpFixture(app, allowedMethods: ["app", "email"])
        let refused = try restricted.requestCode(app, method: "sms-1")
        #expect(refused.status == 422)
        #expect(refused.errorEnvelope()?["code"] as? String == "activation_method_not_allowed")
        #expect(try restricted.requestCode(app, method: "pigeon-1").status == 404)
        #expect(try restricted.requestCode(app, method: "email-1").status == 201)

        let unknown = try app.postAsTSP(
            "/v1/tsp/activation-codes", #"{"tokenReference":"nope","activationMethodId":"sms-1"}"#)
        #expect(unknown.status == 404)
        #expect(
            try app.client.postJSON("/v1/tsp/activation-codes", #"{"tokenReference":"x","activationMethodId":"sms-1"}"#)
                .status == 401)

        let active = try StepUpFixture(app, status: "active")
        #expect(try active.requestCode(app).status == 409)

        let limited = try StepUpFixture(app)
        for index in 0..<3 { #expect(try limited.requestCode(app, padding: index).status == 201) }
        let fourth = try limited.requestCode(app, padding: 3)
        #expect(fourth.status == 429)
        #expect(fourth.header("Retry-After") != nil)
        // Only the newest challenge is live: the older ones were superseded.
        let statuses = try app.pool.withConnection { connection in
            try connection.query(
                "SELECT status FROM challenges WHERE token_reference = \(limited.tokenReference) ORDER BY created_at"
            )
            .map { try $0.decode("status", as: String.self) }
        }
        #expect(statuses == ["superseded", "superseded", "pending"])
    }

    @Test("An IVR key verifies ARS codes only; other roles are refused")
    func ivrVerification() throws {
        let app = try TestApplication(environment: Self.fastOutbox)
        let fixture = try StepUpFixture(app)
        let ivr = try app.apiKey(role: .ivr)
        let analyst = try app.apiKey(role: .analyst)
        let smsID = try #require(try fixture.requestCode(app, method: "sms-1").jsonObject()?["challengeId"] as? String)
        _ = smsID
        #expect(
            try app.client.postJSON(
                "/v1/tsp/activation-codes/verify", fixture.verifyBody(code: "123456"),
                headers: ["Authorization": "Bearer \(ivr)"]
            ).status == 403)
        #expect(
            try app.client.postJSON(
                "/v1/tsp/activation-codes/verify", fixture.verifyBody(code: "123456"),
                headers: ["Authorization": "Bearer \(analyst)"]
            ).status == 403)
        let arsID = try #require(try fixture.requestCode(app, method: "ars-1").jsonObject()?["challengeId"] as? String)
        let code = try #require(StepUpFixture.loggedCode(app, challengeID: arsID))
        let response = try app.client.postJSON(
            "/v1/tsp/activation-codes/verify", fixture.verifyBody(code: code),
            headers: ["Authorization": "Bearer \(ivr)"])
        #expect(response.jsonObject()?["result"] as? String == "verified")
        let actor = try app.pool.withConnection { connection in
            try connection.query("SELECT actor FROM audit_log WHERE action = 'challenge.verified'").first?.decode(
                "actor", as: String.self)
        }
        #expect(actor?.hasPrefix("apikey:") == true)
    }
}
