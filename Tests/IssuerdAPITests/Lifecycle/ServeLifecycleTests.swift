import Foundation
import IssuerdCrypto
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The `issuerd serve` process as an operator meets it: one clear line for a bad setting,
/// SIGHUP reloads without stopping, SIGTERM and SIGINT stop gracefully with exit status 0.
@Suite("issuerd serve process lifecycle")
struct ServeLifecycleTests {
    static func environment(database: TestDatabase, directory: URL, port: Int) throws -> [String: String] {
        let pki = try DevelopmentPKI.generate()
        try pki.write(to: directory.appendingPathComponent("pki"))
        return [
            "ISSUERD_DATABASE_URL": database.connectionString, "ISSUERD_LISTEN": "127.0.0.1:\(port)",
            "ISSUERD_RULES_DIR": TestApplication.repositoryRoot.appendingPathComponent("rules").path,
            "ISSUERD_SQL_DIR": TestApplication.repositoryRoot.appendingPathComponent("sql").path,
            "ISSUERD_APPLE_TRUST": directory.appendingPathComponent("pki/root.pem").path,
            "ISSUERD_MASTER_KEY": Data(repeating: 0x42, count: 32).base64EncodedString(),
            "ISSUERD_APP_JWT_SECRET": String(repeating: "a", count: 40),
            "ISSUERD_TSP_HMAC_SECRET": "tsp-secret-0123456789abcdef",
            "ISSUERD_NOTIFY_LOG_FILE": directory.appendingPathComponent("notifications.jsonl").path,
            "ISSUERD_LOG_LEVEL": "warning",
        ]
    }

    /// Waits for the child to exit, at most `limit`; nil if it is still running then.
    static func exitStatus(_ pid: pid_t, within limit: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(limit)
        var status: Int32 = 0
        while Date() < deadline {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F) }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    static func waitUntilReady(_ client: HTTPTestClient) -> Bool {
        for _ in 0..<300 {
            if (try? client.get("/readyz").status) == 200 { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    @Test(
        "SIGHUP keeps serving; SIGTERM and SIGINT exit 0 well inside the 5 s shutdown budget",
        arguments: [SIGTERM, SIGINT])
    func gracefulStop(signal: Int32) throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-serve-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try LoopbackPort.free()
        let pid = try OutboxCrashTests.spawn(
            environment: try Self.environment(database: database, directory: directory, port: port))
        let client = HTTPTestClient(port: port)
        guard Self.waitUntilReady(client) else {
            kill(pid, SIGKILL)
            OutboxCrashTests.reap(pid)
            Issue.record("issuerd serve never became ready")
            return
        }
        kill(pid, SIGHUP)
        #expect(Self.exitStatus(pid, within: 0.3) == nil, "SIGHUP must not stop the server")
        #expect(try client.get("/healthz").status == 200)

        kill(pid, signal)
        // 10 s is a liveness bound for a loaded CI machine, not a performance assertion: the
        // server's own budget for draining in-flight requests is 5 s.
        let status = Self.exitStatus(pid, within: 10)
        if status == nil {
            kill(pid, SIGKILL)
            OutboxCrashTests.reap(pid)
        }
        #expect(status == 0)
        #expect(throws: (any Error).self) { try client.get("/healthz") }
    }

    @Test("A missing or malformed setting stops start-up with one line naming it, exit status 78")
    func badSetting() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-bad-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = try Self.environment(database: database, directory: directory, port: 1)
        environment["ISSUERD_MASTER_KEY"] = "c2hvcnQ="
        let result = try CommandLineRunner.run(["serve"], environment: environment)
        #expect(result.status == 78)
        #expect(
            result.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
                == "issuerd serve: ISSUERD_MASTER_KEY: must decode to 32 bytes, not 5")
        environment.removeValue(forKey: "ISSUERD_DATABASE_URL")
        let missing = try CommandLineRunner.run(["serve"], environment: environment)
        #expect(missing.status == 78)
        #expect(missing.standardError.contains("ISSUERD_DATABASE_URL: is required"))
        #expect(missing.standardError.split(separator: "\n").count == 1)
    }

    @Test("A secret file readable by others stops start-up with exit 78 and one line naming it; a 0600 one serves")
    func sharedSecretFileRefused() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-secret-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = try Self.environment(database: database, directory: directory, port: 1)
        let secret = directory.appendingPathComponent("master.key").path
        _ = FileManager.default.createFile(
            atPath: secret, contents: Data((environment["ISSUERD_MASTER_KEY"]! + "\n").utf8),
            attributes: [.posixPermissions: 0o644])
        environment["ISSUERD_MASTER_KEY"] = nil
        environment["ISSUERD_MASTER_KEY_FILE"] = secret
        let refused = try CommandLineRunner.run(["serve"], environment: environment)
        #expect(refused.status == 78)
        let line = refused.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line.hasPrefix("issuerd serve: ISSUERD_MASTER_KEY_FILE: \(secret) is readable by its group or others"))
        #expect(!line.contains("\n"))

        // Owner-only, the same file is the master key: the server becomes ready.
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret)
        let port = try LoopbackPort.free()
        environment["ISSUERD_LISTEN"] = "127.0.0.1:\(port)"
        let pid = try OutboxCrashTests.spawn(environment: environment)
        defer {
            kill(pid, SIGKILL)
            OutboxCrashTests.reap(pid)
        }
        #expect(Self.waitUntilReady(HTTPTestClient(port: port)))
    }

    @Test("An unknown ISSUERD_ variable is named at start with the closest setting; a database down at start exits 69")
    func unknownSettingAndUnavailableDatabase() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-unknown-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = try Self.environment(database: database, directory: directory, port: 1)
        environment["ISSUERD_DB_POOLSIZE"] = "4"
        // Nothing listens there: the database is unavailable at start.
        environment["ISSUERD_DATABASE_URL"] =
            "postgresql://127.0.0.1:\(try LoopbackPort.free())/issuerd?connect_timeout=2"
        let result = try CommandLineRunner.run(["serve"], environment: environment)
        #expect(result.status == 69, "\(result.standardError)")
        let warning = result.standardOutput.split(separator: "\n").first { $0.contains("ISSUERD_DB_POOLSIZE") }
        #expect(warning?.contains("did you mean ISSUERD_DB_POOL_SIZE?") == true, "\(result.standardOutput)")
        #expect(warning?.contains("\"level\":\"warning\"") == true)
    }
}
