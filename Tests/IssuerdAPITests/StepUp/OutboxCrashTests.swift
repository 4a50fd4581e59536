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

    @Test("issuerd killed with SIGKILL during dispatch and restarted: every message delivered at least once, none lost")
    func sigkillDuringDispatch() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let pki = try DevelopmentPKI.generate()
        _ = try pki.write(to: directory.appendingPathComponent("pki"))
        let pool = database.makePool(size: 2)
        defer { pool.close() }
        _ = try Migrator(directory: TestApplication.repositoryRoot.appendingPathComponent("sql"), logger: .silent)
            .migrate(using: pool)

        let total = 30
        try pool.transaction { connection in
            for index in 0..<total {
                try OutboxStore.enqueue(
                    kind: .tsp, dedupKey: "crash-\(index)",
                    payload: TSPNotificationPayload(tokenReference: "tok-\(index)", action: "delete"),
                    connection: connection)
            }
        }
        let receiver = try WebhookReceiver()
        receiver.answer(200, delay: 0.15)  // slow enough that the kill lands mid-dispatch
        let environment = [
            "ISSUERD_DATABASE_URL": database.connectionString, "ISSUERD_LISTEN": "127.0.0.1:0",
            "ISSUERD_RULES_DIR": TestApplication.repositoryRoot.appendingPathComponent("rules").path,
            "ISSUERD_SQL_DIR": TestApplication.repositoryRoot.appendingPathComponent("sql").path,
            "ISSUERD_APPLE_TRUST": directory.appendingPathComponent("pki/root.pem").path,
            "ISSUERD_MASTER_KEY": Data(repeating: 0x42, count: 32).base64EncodedString(),
            "ISSUERD_APP_JWT_SECRET": String(repeating: "a", count: 40),
            "ISSUERD_TSP_HMAC_SECRET": "tsp-secret-0123456789abcdef",
            "ISSUERD_TSP_WEBHOOK_URL": receiver.url + "/tsp",
            "ISSUERD_NOTIFY_LOG_FILE": directory.appendingPathComponent("notifications.jsonl").path,
            "ISSUERD_OUTBOX_POLL_INTERVAL": "20ms", "ISSUERD_OUTBOX_LEASE": "2s", "ISSUERD_OUTBOX_HTTP_TIMEOUT": "1s",
            "ISSUERD_OUTBOX_BATCH_SIZE": "5", "ISSUERD_LOG_LEVEL": "critical",
        ]

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
        var delivered: Int64 = 0
        for _ in 0..<250 where delivered != Int64(total) {
            delivered = try pool.withConnection {
                try $0.query("SELECT count(*)::bigint AS n FROM outbox WHERE status = 'delivered'").first!.decode(
                    "n", as: Int64.self)
            }
            if delivered != Int64(total) { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(delivered == Int64(total))
    }
}
