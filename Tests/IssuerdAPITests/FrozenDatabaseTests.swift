import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// PostgreSQL stopped without closing its connections (SIGSTOP: a frozen process, a paused VM, a
/// storage stall), seen from a client of the API. `scripts/reliability --only freeze` measures
/// the same under load on two instances.
@Suite("A frozen database over HTTP")
struct FrozenDatabaseTests {
    @Test("healthz answers at once, readyz says unavailable within the deadline, and the instance serves again after")
    func frozenDatabase() throws {
        let server = try DisposablePostgresServer()
        defer { server.destroy() }
        let app = try TestApplication(environment: [
            "ISSUERD_DATABASE_URL": server.connectionString, "ISSUERD_DB_STATEMENT_TIMEOUT": "1s",
            "ISSUERD_DB_ACQUIRE_TIMEOUT": "1s", "ISSUERD_DB_POOL_SIZE": "2", "ISSUERD_HTTP_THREADS": "2",
        ])
        #expect(try app.client.get("/readyz").status == 200)

        try server.freeze()
        // More /readyz at once than there are handler threads: every handler waits on the database.
        let client = app.client
        let results = Answers()
        let finished = DispatchGroup()
        for _ in 0..<4 {
            finished.enter()
            Thread {
                let start = Date()
                let answer = try? client.get("/readyz")
                let database = (answer?.jsonObject()?["checks"] as? [[String: Any]])?.first {
                    $0["name"] as? String == "database"
                }
                results.append(
                    status: answer?.status ?? 0, detail: database?["detail"] as? String,
                    seconds: Date().timeIntervalSince(start))
                finished.leave()
            }.start()
        }
        // The database stays frozen until every /readyz has answered, however slowly this run
        // goes (under a sanitizer, several times slower): a thaw on a fixed timer once came before
        // the last answer on a slow run, which then found the database up again and said 200.
        // The minute only keeps a broken deadline from hanging the test; its answers then fail.
        let safety = Thread {
            _ = finished.wait(timeout: .now() + 60)
            try? server.thaw()
        }
        safety.start()
        Thread.sleep(forTimeInterval: 0.3)
        var slowestHealth = 0.0
        for _ in 0..<5 {
            let start = Date()
            let health = try app.client.get("/healthz")
            slowestHealth = max(slowestHealth, Date().timeIntervalSince(start))
            #expect(health.status == 200)
        }
        #expect(slowestHealth < 0.5, "/healthz took \(slowestHealth) s while the database was frozen")
        #expect(finished.wait(timeout: .now() + 90) == .success)
        let answers = results.all
        #expect(answers.count == 4)
        for answer in answers {
            // Answered by a deadline while the database was still frozen: the statement's (1 s),
            // or the pool's acquire timeout (1 s) for those that had to connect or wait for a
            // connection. Which one, not how long it took, is what shows the wait was bounded.
            #expect(answer.status == 503, "a /readyz answered \(answer.status) after \(answer.seconds) s")
            #expect(
                ["timedOut", "poolTimeout", "unavailable"].contains(answer.detail ?? ""),
                "a /readyz's database check said \(answer.detail ?? "nothing") after \(answer.seconds) s")
        }

        try server.thaw()
        var status = 0
        for _ in 0..<50 where status != 200 {
            status = try app.client.get("/readyz").status
            if status != 200 { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(status == 200, "the instance did not serve again after the database resumed")
    }
}

/// What the concurrent requests got, collected from their threads.
private final class Answers: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var items: [(status: Int, detail: String?, seconds: Double)] = []

    func append(status: Int, detail: String?, seconds: Double) {
        lock.lock()
        defer { lock.unlock() }
        items.append((status, detail, seconds))
    }

    var all: [(status: Int, detail: String?, seconds: Double)] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}
