import Foundation
import IssuerdCrypto
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// A card reissue across a crash: a real `issuerd serve` child commits the reissue and is killed
/// with SIGKILL before any Customer Service API call; a restarted one moves each token once.
@Suite("Card reissue across SIGKILL")
struct ReissueCrashTests {
    @Test("issuerd killed between the reissue and the CSAPI call: after restart every token is moved exactly once")
    func killedBeforeTheCall() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-reissue-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let pool = database.makePool(size: 2)
        defer { pool.close() }
        let fake = try FakeCustomerServiceAPI(decryptionKeyPEM: GooglePayFixtures.mastercard.privateKeyPEM)
        let port = try LoopbackPort.free()
        var environment = try ServeLifecycleTests.environment(database: database, directory: directory, port: port)
        let certificate = directory.appendingPathComponent("mastercard.pem")
        try GooglePayFixtures.mastercard.certificatePEM.write(to: certificate, atomically: true, encoding: .utf8)
        environment.merge(fake.environment) { $1 }
        environment["ISSUERD_MDES_MASTERCARD_CERT"] = certificate.path
        environment["ISSUERD_OUTBOX_POLL_INTERVAL"] = "20ms"
        // Long enough that a slow run (a loaded machine, a sanitizer build) never times a call
        // out and retries it: a retry is allowed at-least-once delivery, but this test counts calls.
        environment["ISSUERD_OUTBOX_LEASE"] = "60s"
        environment["ISSUERD_OUTBOX_HTTP_TIMEOUT"] = "30s"
        environment["ISSUERD_LOG_LEVEL"] = "critical"
        var withoutDispatch = environment
        withoutDispatch["ISSUERD_OUTBOX_DISPATCH"] = "false"

        let first = try OutboxCrashTests.spawn(environment: withoutDispatch)
        let client = HTTPTestClient(port: port)
        guard ServeLifecycleTests.waitUntilReady(client) else {
            kill(first, SIGKILL)
            OutboxCrashTests.reap(first)
            throw TestFailure("issuerd serve never became ready")
        }
        let admin = try pool.withConnection {
            try APIKeyAuthenticator.create(role: .admin, name: "crash test", connection: $0).key
        }
        let headers = AdminFixtures.bearer(admin)
        let pan = AdminFixtures.pan(prefix: "539999", serial: 601)
        let newPAN = AdminFixtures.pan(prefix: "539999", serial: 602)
        #expect(try client.postJSON("/v1/admin/customers", #"{"customerId":"c-k"}"#, headers: headers).status == 201)
        let card = try client.postJSON(
            "/v1/admin/cards",
            #"{"cardId":"card-k","customerId":"c-k","accountNumber":"\#(pan)","expiration":"\#(AdminFixtures.futureExpiration)","cardholderName":"KIM MINJI","paymentNetwork":"mastercard"}"#,
            headers: headers)
        #expect(card.status == 201, "\(card.text)")
        let tokens = [
            CustomerServiceOutboxTests.tokenUniqueReference(), CustomerServiceOutboxTests.tokenUniqueReference(),
        ]
        try pool.withConnection { connection in
            for token in tokens {
                try connection.execute(
                    "INSERT INTO tokens (token_reference, card_id, status, service) VALUES (\(token), 'card-k', 'active', 'mdes')"
                )
            }
        }
        #expect(
            try client.postJSON("/v1/admin/cards/card-k/status", #"{"status":"stolen"}"#, headers: headers).status
                == 200)
        let started = try client.postJSON(
            "/v1/admin/cards/card-k/reissue",
            #"{"reason":"stolen","newCard":{"cardId":"card-k2","accountNumber":"\#(newPAN)","expiration":"\#(ReissueFixture.newExpiration)"},"applyAt":"now"}"#,
            headers: headers.merging(["Idempotency-Key": "crash-reissue"]) { $1 })
        #expect(started.status == 202, "\(started.text)")
        let id = try #require(started.jsonObject()?["reissueId"] as? String)
        kill(first, SIGKILL)
        OutboxCrashTests.reap(first)
        #expect(try fake.requests().isEmpty)  // the kill came before any call

        try fake.accounts([pan: tokens])
        let second = try OutboxCrashTests.spawn(environment: environment)
        defer {
            kill(second, SIGTERM)
            OutboxCrashTests.reap(second)
        }
        #expect(ServeLifecycleTests.waitUntilReady(client))
        // The retry of the reissue after the crash is answered from its key, not done again.
        let retried = try client.postJSON(
            "/v1/admin/cards/card-k/reissue",
            #"{"reason":"stolen","newCard":{"cardId":"card-k2","accountNumber":"\#(newPAN)","expiration":"\#(ReissueFixture.newExpiration)"},"applyAt":"now"}"#,
            headers: headers.merging(["Idempotency-Key": "crash-reissue"]) { $1 })
        #expect(retried.status == 202)
        #expect(retried.header("Idempotent-Replayed") == "true")

        var view: [String: Any] = [:]
        for _ in 0..<2_400 {  // up to two minutes; a normal run takes well under a second
            view = try client.get("/v1/admin/reissues/\(id)", headers: headers).jsonObject() ?? [:]
            if view["status"] as? String == "completed",
                ReissueCustomerServiceTests.requests(try fake.requests(), "unsuspend").count == 2
            {
                break
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(view["status"] as? String == "completed")
        #expect(ReissueFixture.tokenStates(view) == Dictionary(uniqueKeysWithValues: tokens.map { ($0, "confirmed") }))
        let seen = try fake.requests()
        #expect(ReissueCustomerServiceTests.requests(seen, "update").count == 1)
        #expect(ReissueCustomerServiceTests.requests(seen, "unsuspend").count == 2)
        let moved = try pool.withConnection { connection in
            try connection.query(
                "SELECT count(*)::int8 AS n FROM tokens WHERE card_id = 'card-k2' AND status = 'active'"
            ).first?.decode("n", as: Int64.self)
        }
        #expect(moved == 2)
        let rows = try pool.withConnection { connection in
            try connection.query(
                "SELECT count(*)::int8 AS n FROM outbox WHERE dedup_key LIKE 'mdes_csapi:update:%' AND status = 'delivered'"
            ).first?.decode("n", as: Int64.self)
        }
        #expect(rows == 1)
    }
}
