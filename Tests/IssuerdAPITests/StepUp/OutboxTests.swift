import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdOutbox
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The outbox over real PostgreSQL and a real receiver: retries, dead letters, administration.
@Suite("Outbox delivery and administration")
struct OutboxTests {
    static func enqueueTSP(_ app: TestApplication, count: Int, prefix: String) throws {
        try app.pool.transaction { connection in
            for index in 0..<count {
                try OutboxStore.enqueue(
                    kind: .tsp, dedupKey: "\(prefix)-\(index)",
                    payload: TSPNotificationPayload(
                        tokenReference: "tok-\(index)", action: "suspend", reason: "lost", cardId: "card-x"),
                    connection: connection)
            }
        }
    }

    static func statuses(_ app: TestApplication) throws -> [String: Int] {
        try app.pool.withConnection { connection in
            var result: [String: Int] = [:]
            for row in try connection.query("SELECT status, count(*)::bigint AS n FROM outbox GROUP BY status") {
                result[try row.decode("status")] = Int(try row.decode("n", as: Int64.self))
            }
            return result
        }
    }

    @Test("A receiver that is down for a while gets every message once it is back; nothing is lost")
    func receiverDownThenBack() throws {
        let receiver = try WebhookReceiver()
        receiver.answer(503)
        let app = try StepUpFlowTests.webhookApp(receiver, extra: ["ISSUERD_OUTBOX_MAX_ATTEMPTS": "100"])
        try Self.enqueueTSP(app, count: 10, prefix: "down")
        // Wait until every message has failed at least twice, then bring the receiver back.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let failedTwice = try app.pool.withConnection { connection in
                try connection.query(
                    "SELECT count(*)::bigint AS n FROM outbox WHERE attempts >= 2 AND last_error IS NOT NULL"
                ).first!.decode("n", as: Int64.self)
            }
            if failedTwice == 10 { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(receiver.received.isEmpty)
        let failing = try app.client.get(
            "/v1/admin/outbox", headers: ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"])
        #expect(failing.status == 200)
        #expect((failing.jsonObject()?["failing"] as? [[String: Any]])?.count == 10)
        #expect(
            (failing.jsonObject()?["failing"] as? [[String: Any]])?.first?["lastError"] as? String
                == "rejected: HTTP 503")

        receiver.answer(200)
        let received = receiver.wait { Set($0.compactMap { $0.header("Idempotency-Key") }).count == 10 }
        #expect(Set(received.compactMap { $0.header("Idempotency-Key") }) == Set((0..<10).map { "down-\($0)" }))
        var statuses: [String: Int] = [:]
        for _ in 0..<200 {
            statuses = try Self.statuses(app)
            if statuses["delivered"] == 10 { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(statuses == ["delivered": 10])
        let metrics = try app.client.get("/metrics").text
        #expect(metrics.contains(#"issuerd_outbox_backlog{kind="tsp",status="delivered"} 10"#))
        #expect(metrics.contains(#"issuerd_outbox_deliveries_total{kind="tsp",result="retry"}"#))
    }

    @Test(
        "A slow receiver: the dispatcher stops delivering a batch before its lease runs out and gives the rest back untried"
    )
    func batchReleasedBeforeTheLeaseEnds() throws {
        let receiver = try WebhookReceiver()
        receiver.answer(200, delay: 0.7)
        // Lease 3 s, timeout 1 s (+1 s guard): a delivery may start only in the batch's first second.
        let app = try StepUpFlowTests.webhookApp(
            receiver,
            extra: [
                "ISSUERD_OUTBOX_DISPATCH": "false", "ISSUERD_OUTBOX_LEASE": "3s", "ISSUERD_OUTBOX_HTTP_TIMEOUT": "1s",
                "ISSUERD_OUTBOX_BATCH_SIZE": "6",
            ])
        try Self.enqueueTSP(app, count: 6, prefix: "slow")
        #expect(try app.application.outbox.dispatchOnce() == 6)
        let delivered = receiver.received.count
        #expect((1...2).contains(delivered), "\(delivered) delivered")
        #expect(try Self.statuses(app) == ["delivered": delivered, "pending": 6 - delivered])
        // The untried ones are due again at once and were not counted as tries.
        let released = try DecisionFixtures.count(
            app, "SELECT count(*) FROM outbox WHERE status = 'pending' AND attempts = 0 AND next_attempt_at <= now()")
        #expect(released == 6 - delivered)
    }

    @Test("After N failed tries a message is dead-lettered; an admin re-queues it, audited")
    func deadLetterAndRequeue() throws {
        let receiver = try WebhookReceiver()
        receiver.answer(500)
        let app = try StepUpFlowTests.webhookApp(receiver, extra: ["ISSUERD_OUTBOX_MAX_ATTEMPTS": "2"])
        try Self.enqueueTSP(app, count: 1, prefix: "dead")
        var statuses: [String: Int] = [:]
        for _ in 0..<500 {
            statuses = try Self.statuses(app)
            if statuses["dead"] == 1 { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(statuses == ["dead": 1])
        let admin = try app.apiKey(role: .admin)
        let analyst = try app.apiKey(role: .analyst)
        let view = try app.client.get("/v1/admin/outbox", headers: ["Authorization": "Bearer \(analyst)"])
        let dead = try #require((view.jsonObject()?["deadLetters"] as? [[String: Any]])?.first)
        #expect(dead["tries"] as? Int == 2)
        #expect(dead["action"] as? String == "suspend")
        let messageID = try #require(dead["messageId"] as? String)
        // By kind: the TSP message under tsp, nothing under notify; an unknown kind is 400.
        let byKind = { (kind: String) in
            try app.client.get("/v1/admin/outbox?kind=\(kind)", headers: ["Authorization": "Bearer \(analyst)"])
        }
        #expect((try byKind("tsp").jsonObject()?["deadLetters"] as? [[String: Any]])?.count == 1)
        let notify = try byKind("notify").jsonObject()
        #expect((notify?["deadLetters"] as? [[String: Any]])?.isEmpty == true)
        #expect((notify?["counts"] as? [[String: Any]])?.allSatisfy { $0["kind"] as? String == "notify" } == true)
        let unknown = try byKind("sms")
        #expect(unknown.status == 400, "\(unknown.text)")
        #expect(unknown.text.contains("mdes_csapi"))

        #expect(
            try app.client.postJSON(
                "/v1/admin/outbox/\(messageID)/requeue", "{}", headers: ["Authorization": "Bearer \(analyst)"]
            ).status == 403)
        #expect(
            try app.client.postJSON(
                "/v1/admin/outbox/999999/requeue", "{}", headers: ["Authorization": "Bearer \(admin)"]
            ).status == 404)
        receiver.answer(200)
        let requeued = try app.client.postJSON(
            "/v1/admin/outbox/\(messageID)/requeue", "{}", headers: ["Authorization": "Bearer \(admin)"])
        #expect(requeued.status == 200)
        #expect(requeued.jsonObject()?["tries"] as? Int == 0)
        receiver.wait { !$0.isEmpty }
        #expect(receiver.received.count == 1)
        // Not dead any more: a second re-queue is a state conflict.
        #expect(
            try app.client.postJSON(
                "/v1/admin/outbox/\(messageID)/requeue", "{}", headers: ["Authorization": "Bearer \(admin)"]
            ).status == 409)
        let audited = try app.pool.withConnection { connection in
            try connection.query("SELECT count(*)::bigint AS n FROM audit_log WHERE action = 'outbox.requeued'").first!
                .decode("n", as: Int64.self)
        }
        #expect(audited == 1)
    }

    @Test("A dead-lettered message is logged at warning, a retried one at notice")
    func deadLetterLoggedAtWarning() throws {
        let receiver = try WebhookReceiver()
        receiver.answer(500)
        let lines = LineCollector()
        let app = try StepUpFlowTests.webhookApp(
            receiver, extra: ["ISSUERD_OUTBOX_MAX_ATTEMPTS": "2", "ISSUERD_OUTBOX_DISPATCH": "false"],
            logger: Logger(label: "issuerd", minimumLevel: .debug, handler: lines))
        try Self.enqueueTSP(app, count: 1, prefix: "warn")
        #expect(try app.application.outbox.dispatchOnce() == 1)
        try app.pool.withConnection { try $0.execute("UPDATE outbox SET next_attempt_at = now()") }
        #expect(try app.application.outbox.dispatchOnce() == 1)
        #expect(try Self.statuses(app) == ["dead": 1])
        let retried = try #require(lines.lines.first { $0.contains("outbox delivery failed") })
        #expect(retried.contains(#""level":"notice""#))
        let dead = try #require(lines.lines.first { $0.contains("outbox message dead-lettered") })
        #expect(dead.contains(#""level":"warning""#))
    }

    @Test("Without ISSUERD_TSP_WEBHOOK_URL TSP messages stay pending and visible, step-up codes still go out")
    func tspWithoutURL() throws {
        let app = try TestApplication(environment: StepUpFlowTests.fastOutbox)
        try Self.enqueueTSP(app, count: 2, prefix: "nourl")
        let fixture = try StepUpFixture(app)
        let challengeID = try #require(try fixture.requestCode(app).jsonObject()?["challengeId"] as? String)
        #expect(StepUpFixture.loggedCode(app, challengeID: challengeID) != nil)
        let status = try app.client.get(
            "/v1/admin/outbox", headers: ["Authorization": "Bearer \(try app.apiKey(role: .admin))"])
        #expect(status.jsonObject()?["backlog"] as? Int == 2)
        #expect(status.text.range(of: fixture.phone) == nil)
    }

    @Test(
        "Backoff doubles up to the ceiling with jitter in [d/2, d], then dead-letters",
        arguments: [
            (1, 0.0, 1.0), (1, 1.0, 2.0), (2, 1.0, 4.0), (3, 0.5, 6.0), (10, 1.0, 60.0),
        ])
    func backoff(attempt: Int, unit: Double, expected: Double) {
        let backoff = OutboxBackoff(base: .seconds(2), maximum: .seconds(60), maxAttempts: 11)
        #expect(backoff.decision(afterAttempt: attempt, unit: unit) == .retry(after: expected))
        #expect(backoff.decision(afterAttempt: 11, unit: unit) == .deadLetter)
    }

    @Test("Codes are six digits, uniform in shape, and the sealer refuses a payload moved to another message")
    func codesAndSealing() throws {
        let codes = try (0..<200).map { _ in try OneTimeCode.generate() }
        #expect(codes.allSatisfy(OneTimeCode.isWellFormed))
        #expect(Set(codes).count > 190)
        #expect(OneTimeCode.format(42) == "000042")
        let ring = try MasterKeyRing(keys: [1: try SymmetricKey(bytes: [UInt8](repeating: 7, count: 32))])
        let sealer = OutboxSealer(keyRing: ring)
        let sealed = try sealer.seal(Array("secret".utf8), dedupKey: "notify:a")
        #expect(try sealer.open(sealed, dedupKey: "notify:a") == Array("secret".utf8))
        #expect(throws: (any Error).self) { try sealer.open(sealed, dedupKey: "notify:b") }
    }
}
