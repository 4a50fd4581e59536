import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdOutbox
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The outbox across a crash: a real `issuerd serve` child process is killed with SIGKILL in
/// the middle of dispatching, restarted, and every message still arrives.
@Suite("Outbox across SIGKILL")
struct OutboxCrashTests {
    /// Starts `issuerd serve` (``IssuerdExecutable``) with `environment` only, output discarded,
    /// plus this process's sanitizer options (``IssuerdExecutable/environment(_:)``).
    static func spawn(environment: [String: String]) throws -> pid_t {
        let issuerdExecutable = try IssuerdExecutable.checkedPath()
        let environment = IssuerdExecutable.environment(environment)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let words: [String] = [issuerdExecutable, "serve"]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) }
        let variables: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") }
        defer { for pointer in arguments + variables { free(pointer) } }
        var pid: pid_t = 0
        let status = (arguments + [nil]).withUnsafeBufferPointer { argv in
            (variables + [nil]).withUnsafeBufferPointer { envp in
                posix_spawn(&pid, issuerdExecutable, &actions, nil, argv.baseAddress!, envp.baseAddress!)
            }
        }
        guard status == 0 else { throw TestFailure("cannot start \(issuerdExecutable): error \(status)") }
        return pid
    }

    static func reap(_ pid: pid_t) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }

    /// `issuerd serve`'s environment for `database`, with the development PKI written under
    /// `directory`, TSP notifications to `receiver` and a fast outbox.
    static func environment(
        database: TestDatabase, directory: URL, receiver: WebhookReceiver
    ) throws -> [String: String] {
        let pki = try DevelopmentPKI.generate()
        _ = try pki.write(to: directory.appendingPathComponent("pki"))
        return [
            "ISSUERD_DATABASE_URL": database.connectionString, "ISSUERD_LISTEN": "127.0.0.1:0",
            "ISSUERD_RULES_DIR": TestApplication.repositoryRoot.appendingPathComponent("rules").path,
            "ISSUERD_SQL_DIR": TestApplication.repositoryRoot.appendingPathComponent("sql").path,
            "ISSUERD_APPLE_TRUST": directory.appendingPathComponent("pki/root.pem").path,
            "ISSUERD_MASTER_KEY": Data(repeating: 0x42, count: 32).base64EncodedString(),
            "ISSUERD_APP_JWT_SECRET": String(repeating: "a", count: 40),
            "ISSUERD_TSP_HMAC_SECRET": "tsp-secret-0123456789abcdef",
            "ISSUERD_TSP_WEBHOOK_URL": receiver.url + "/tsp",
            "ISSUERD_NOTIFY_LOG_FILE": directory.appendingPathComponent("notifications.jsonl").path,
            "ISSUERD_OUTBOX_POLL_INTERVAL": "20ms", "ISSUERD_LOG_LEVEL": "critical",
        ]
    }

    /// A migrated throwaway database with `total` TSP messages in its outbox (deduplication keys
    /// `key-0`, `key-1`, …), and a scratch directory; ``remove()`` (deferred by the test before
    /// it starts a process on them, so after that process is stopped) drops both.
    struct Fixture {
        let database: TestDatabase
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-crash-\(UUID().uuidString)")
        let pool: PostgresPool

        init(total: Int, key: String, payload: (Int) -> TSPNotificationPayload) throws {
            database = try TestDatabase.create()
            pool = database.makePool(size: 2)
            _ = try Migrator(directory: TestApplication.repositoryRoot.appendingPathComponent("sql"), logger: .silent)
                .migrate(using: pool)
            try pool.transaction { connection in
                for index in 0..<total {
                    try OutboxStore.enqueue(
                        kind: .tsp, dedupKey: "\(key)-\(index)", payload: payload(index),
                        connection: connection)
                }
            }
        }

        /// The outbox rows delivered.
        func delivered() throws -> Int64 {
            try pool.withConnection {
                try $0.query("SELECT count(*)::bigint AS n FROM outbox WHERE status = 'delivered'").first!.decode(
                    "n", as: Int64.self)
            }
        }

        /// The delivered count once it reaches `total`, or as it stands after about `seconds`.
        func delivered(waitingFor total: Int, seconds: Double) throws -> Int64 {
            var delivered: Int64 = 0
            for _ in 0..<Int(seconds / 0.02) where delivered != Int64(total) {
                delivered = try self.delivered()
                if delivered != Int64(total) { Thread.sleep(forTimeInterval: 0.02) }
            }
            return delivered
        }

        func remove() {
            pool.close()
            database.drop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test("issuerd killed with SIGKILL during dispatch and restarted: every message delivered at least once, none lost")
    func sigkillDuringDispatch() throws {
        let total = 30
        let fixture = try Fixture(total: total, key: "crash") {
            TSPNotificationPayload(tokenReference: "tok-\($0)", action: "delete")
        }
        defer { fixture.remove() }
        let receiver = try WebhookReceiver()
        receiver.answer(200, delay: 0.15)  // slow enough that the kill lands mid-dispatch
        let environment = try Self.environment(
            database: fixture.database, directory: fixture.directory, receiver: receiver
        ).merging([
            "ISSUERD_OUTBOX_LEASE": "2s", "ISSUERD_OUTBOX_HTTP_TIMEOUT": "1s", "ISSUERD_OUTBOX_BATCH_SIZE": "5",
        ]) { $1 }

        let first = try Self.spawn(environment: environment)
        let before = receiver.wait(timeout: 60) { $0.count >= 4 }
        kill(first, SIGKILL)
        Self.reap(first)
        #expect(before.count >= 4)
        let deliveredBeforeKill = Set(receiver.received.compactMap { $0.header("Idempotency-Key") })
        #expect(deliveredBeforeKill.count < total)  // the kill really interrupted the work

        let second = try Self.spawn(environment: environment)
        defer {
            kill(second, SIGTERM)
            Self.reap(second)
        }
        let all = receiver.wait(timeout: 90) { Set($0.compactMap { $0.header("Idempotency-Key") }).count == total }
        #expect(Set(all.compactMap { $0.header("Idempotency-Key") }) == Set((0..<total).map { "crash-\($0)" }))
        #expect(try fixture.delivered(waitingFor: total, seconds: 5) == Int64(total))
    }

    @Test(
        "issuerd killed with SIGKILL while several cards' messages are in flight at once: after restart each one is delivered, none lost"
    )
    func sigkillWithDeliveriesInFlight() throws {
        let total = 12
        let fixture = try Fixture(total: total, key: "inflight") {
            TSPNotificationPayload(tokenReference: "tok-\($0)", action: "suspend", cardId: "card-\($0)")
        }
        defer { fixture.remove() }
        // Every request is held until the kill: the first process never records a delivery.
        let receiver = try WebhookReceiver(concurrent: true)
        let killed = Lock(false)
        receiver.gate { [receiver] _ in
            receiver.wait(timeout: 60) { _ in killed.withLock { $0 } }
        }
        let environment = try Self.environment(
            database: fixture.database, directory: fixture.directory, receiver: receiver
        ).merging([
            "ISSUERD_OUTBOX_LEASE": "12s", "ISSUERD_OUTBOX_HTTP_TIMEOUT": "10s", "ISSUERD_OUTBOX_BATCH_SIZE": "12",
            "ISSUERD_OUTBOX_CONCURRENCY": "4",
        ]) { $1 }

        let first = try Self.spawn(environment: environment)
        let arrivals = { receiver.events.filter { $0.hasPrefix("arrived ") } }
        receiver.wait(timeout: 60) { _ in arrivals().count >= 4 }
        kill(first, SIGKILL)
        Self.reap(first)
        let inFlight = Set(arrivals().map { $0.dropFirst("arrived ".count) })
        #expect(inFlight.count >= 4, "\(receiver.events)")
        // Four at once: no try had ended when the fourth arrived. One at a time, each held
        // request would have timed out (recorded as a failed try) before the next went.
        let failedTries = try fixture.pool.withConnection {
            try $0.query("SELECT count(*)::bigint AS n FROM outbox WHERE last_error IS NOT NULL").first!.decode(
                "n", as: Int64.self)
        }
        #expect(failedTries == 0)
        killed.withLock { $0 = true }
        #expect(try fixture.delivered() == 0)

        let second = try Self.spawn(environment: environment)
        defer {
            kill(second, SIGTERM)
            Self.reap(second)
        }
        #expect(try fixture.delivered(waitingFor: total, seconds: 60) == Int64(total))
        let answered = Set(receiver.received.compactMap { $0.header("Idempotency-Key") })
        #expect(answered == Set((0..<total).map { "inflight-\($0)" }))
        // The ones in flight at the kill went again after the restart.
        for key in inFlight {
            #expect(receiver.events.filter { $0 == "arrived \(key)" }.count >= 2, "\(key)")
        }
    }
}
