import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("Audit entries are appended unchained and sealed into one chain afterwards")
struct AuditSealTests {
    private func verifyCommand(_ app: TestApplication, _ extra: [String] = []) throws -> CommandLineRunner.Result {
        try CommandLineRunner.run(
            ["audit", "verify"] + extra, environment: ["ISSUERD_DATABASE_URL": app.serviceConnectionString])
    }

    private func append(_ subject: String, at time: Date = Date(), pool: PostgresPool) throws {
        try pool.transaction {
            try AuditLog.append(
                actor: "test", action: "test.appended", subject: subject, details: ["n": subject], at: time,
                connection: $0)
        }
    }

    private func counts(
        _ app: TestApplication
    ) throws -> (total: Int64, unsealed: Int64, distinctSequences: Int64, maxSequence: Int64) {
        try app.pool.withConnection { connection in
            let row = try connection.query(
                """
                SELECT count(*)::bigint AS total, count(*) FILTER (WHERE seq IS NULL)::bigint AS unsealed,
                       count(DISTINCT seq)::bigint AS distinct_seq, coalesce(max(seq), 0)::bigint AS max_seq FROM audit_log
                """
            ).first!
            return (
                try row.decode("total"), try row.decode("unsealed"), try row.decode("distinct_seq"),
                try row.decode("max_seq")
            )
        }
    }

    @Test(
        "Appends from many connections while sealers run on two instances are each sealed exactly once into one unbroken chain"
    )
    func concurrentAppends() throws {
        let app = try TestApplication(environment: ["ISSUERD_AUDIT_SEAL_INTERVAL": "10ms"])
        let second = try TestApplication(environment: ["ISSUERD_AUDIT_SEAL_INTERVAL": "10ms"], sharing: app)
        let writers = app.database.makePool(size: 8)
        defer { writers.close() }
        let failures = Lock(0)
        let sealedExplicitly = Lock(0)
        DispatchQueue.concurrentPerform(iterations: 8) { writer in
            for index in 0..<40 {
                do {
                    try append("w\(writer)-\(index)", pool: writers)
                    // A few explicit seals racing the background ones, as `audit verify` would.
                    if index % 10 == 0 {
                        let sealed = try writers.withConnection {
                            try AuditLog.seal(connection: $0, wait: writer % 2 == 0)
                        }
                        sealedExplicitly.withLock { $0 += sealed }
                    }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        let report = try AuditChainCheck.verify(database: app.pool)
        #expect(report.isIntact, "\(report.problem ?? "")")
        #expect(report.unsealed == 0)
        let counted = try counts(app)
        #expect(counted.total == 320)
        #expect(counted.unsealed == 0)
        #expect(counted.distinctSequences == 320)
        #expect(counted.maxSequence == 320)
        #expect(report.entries == 320)
        // Each sealed once: what every sealer reports having chained adds up to the entries.
        let sealedInBackground = [app, second].compactMap {
            $0.application.metrics.value(of: "issuerd_audit_sealed_total")
        }.reduce(0, +)
        #expect(Int(sealedInBackground) + sealedExplicitly.withLock { $0 } + report.sealed == 320)
    }

    @Test("The background sealer chains a committed entry within its interval")
    func backgroundSealer() throws {
        let app = try TestApplication(environment: ["ISSUERD_AUDIT_SEAL_INTERVAL": "50ms"])
        try append("background", pool: app.pool)
        let deadline = Date().addingTimeInterval(10)
        while try counts(app).unsealed > 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(try counts(app).unsealed == 0)
        #expect(try AuditChainCheck.verify(database: app.pool, seal: false).entries == 1)
    }

    @Test(
        "An entry left unsealed past the limit is reported (exit 1) until a seal chains it; the trigger still refuses editing it"
    )
    func staleUnsealed() throws {
        let app = try TestApplication(environment: ["ISSUERD_AUDIT_SEAL": "false"])
        try append("old", at: Date().addingTimeInterval(-120), pool: app.pool)
        try append("fresh", pool: app.pool)
        #expect(throws: PostgresError.self) {
            try app.pool.withConnection { try $0.execute("UPDATE audit_log SET actor = 'x' WHERE subject = 'old'") }
        }
        #expect(throws: PostgresError.self) {
            try app.pool.withConnection { try $0.execute("DELETE FROM audit_log WHERE subject = 'old'") }
        }

        let report = try AuditChainCheck.verify(database: app.pool, seal: false, unsealedMaxAge: .seconds(60))
        #expect(report.isIntact)
        #expect(report.entries == 0)
        #expect(report.unsealed == 2)
        #expect(report.hasStaleUnsealed)
        #expect((report.oldestUnsealedAge ?? .zero) >= .seconds(119))
        let inspected = try verifyCommand(app, ["--no-seal"])
        #expect(inspected.status == 1)
        #expect(inspected.standardOutput.contains("NOT SEALED: 2"), "\(inspected.standardOutput)")
        #expect(try verifyCommand(app, ["--no-seal", "--max-unsealed-age", "600"]).status == 0)
        #expect(try verifyCommand(app, ["--max-unsealed-age", "0"]).status == 2)

        // Sealing first (the default) chains both, in order of arrival.
        let sealed = try verifyCommand(app)
        #expect(sealed.status == 0, "\(sealed.standardError)")
        #expect(sealed.standardOutput.contains("intact: 2 entries"), "\(sealed.standardOutput)")
        let order = try app.pool.withConnection {
            try $0.query("SELECT subject FROM audit_log ORDER BY seq").map { try $0.decode("subject", as: String.self) }
        }
        #expect(order == ["old", "fresh"])
        #expect(try counts(app).unsealed == 0)
    }
}
