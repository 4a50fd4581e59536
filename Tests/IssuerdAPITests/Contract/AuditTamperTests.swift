import Foundation
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("The audit chain detects edited and deleted entries")
struct AuditTamperTests {
    /// An instance with a few audited changes (customer, card, status change).
    private func audited() throws -> TestApplication {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c1", card: "card-1", serial: 1)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c2", card: "card-2", serial: 2)
        _ = try app.client.postJSON(
            "/v1/admin/cards/card-1/status", #"{"status":"lost"}"#, headers: AdminFixtures.bearer(admin))
        // Chain everything now (the background sealer may not have had its round yet).
        try app.pool.withConnection { _ = try AuditLog.seal(connection: $0, wait: true) }
        return app
    }

    /// Runs `sql` with the append-only trigger disabled, as a superuser attacker could.
    private func tamper(_ app: TestApplication, _ sql: String) throws {
        try app.pool.withConnection { connection in
            try connection.execute(unsafeSQL: "ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update")
            try connection.execute(unsafeSQL: sql)
            try connection.execute(unsafeSQL: "ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_update")
        }
    }

    private func verifyCommand(_ app: TestApplication) throws -> CommandLineRunner.Result {
        try CommandLineRunner.run(
            ["audit", "verify"], environment: ["ISSUERD_DATABASE_URL": app.serviceConnectionString])
    }

    @Test(
        "An intact chain verifies in the library and through `issuerd audit verify` (exit 0); the trigger refuses edits"
    )
    func intact() throws {
        let app = try audited()
        let report = try AuditChainCheck.verify(database: app.pool)
        #expect(report.isIntact)
        #expect(report.entries == 5)
        let command = try verifyCommand(app)
        #expect(command.status == 0, "\(command.standardError)")
        #expect(command.standardOutput.contains("intact: 5 entries"))
        #expect(throws: PostgresError.self) {
            try app.pool.withConnection { try $0.execute("UPDATE audit_log SET actor = 'someone' WHERE seq = 1") }
        }
        #expect(throws: PostgresError.self) {
            try app.pool.withConnection {
                try $0.execute("UPDATE audit_log SET seq = NULL, prev_hash = NULL, hash = NULL WHERE seq = 5")
            }
        }
        #expect(throws: PostgresError.self) {
            try app.pool.withConnection { try $0.execute("DELETE FROM audit_log WHERE seq = 5") }
        }
    }

    @Test("Two sealed entries swapped are reported at the first of them")
    func reordered() throws {
        let app = try audited()
        try tamper(app, "UPDATE audit_log SET seq = 0 WHERE seq = 3")
        try tamper(app, "UPDATE audit_log SET seq = 3 WHERE seq = 4")
        try tamper(app, "UPDATE audit_log SET seq = 4 WHERE seq = 0")
        let report = try AuditChainCheck.verify(database: app.pool)
        #expect(report.firstBrokenSequence == 3)
        #expect(report.entries == 2)
        #expect(try verifyCommand(app).status == 1)
    }

    @Test(
        "An edited entry is reported at its sequence number",
        arguments: ["actor = 'apikey:innocent'", #"details = '{"fields":""}'"#, "at_ms = at_ms + 1"])
    func edited(assignment: String) throws {
        let app = try audited()
        try tamper(app, "UPDATE audit_log SET \(assignment) WHERE seq = 3")
        let report = try AuditChainCheck.verify(database: app.pool)
        #expect(report.firstBrokenSequence == 3)
        #expect(report.entries == 2)
        let command = try verifyCommand(app)
        #expect(command.status == 1)
        #expect(command.standardOutput.contains("BROKEN at sequence 3"), "\(command.standardOutput)")
    }

    @Test("A deleted entry is reported as missing, even when the attacker re-links the next one")
    func deleted() throws {
        let app = try audited()
        try tamper(app, "DELETE FROM audit_log WHERE seq = 2")
        let report = try AuditChainCheck.verify(database: app.pool)
        #expect(report.firstBrokenSequence == 2)
        #expect(report.problem?.contains("missing") == true)
        #expect(try verifyCommand(app).status == 1)

        // Renumbering the rest to hide the gap breaks the link instead.
        try tamper(app, "UPDATE audit_log SET seq = -seq WHERE seq > 2")
        try tamper(app, "UPDATE audit_log SET seq = -seq - 1 WHERE seq < 0")
        let renumbered = try AuditChainCheck.verify(database: app.pool)
        #expect(renumbered.firstBrokenSequence == 2)
        #expect(try verifyCommand(app).standardOutput.contains("sequence 2"))
    }
}
