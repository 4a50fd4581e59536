import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("Database roles: the owner migrates, the service role gets what serving needs and no more")
struct DatabaseRoleTests {
    /// A migrated database with the service role granted: the owner's and the service's connections.
    private func granted() throws -> (database: TestDatabase, owner: PostgresConnection, service: PostgresConnection) {
        let database = try TestDatabase.create()
        let service = try TestServiceRole.prepare(database)
        return (
            database, try PostgresConnection(connectionString: database.connectionString),
            try PostgresConnection(connectionString: service)
        )
    }

    /// The SQLSTATE `sql` fails with, or nil when it succeeds.
    private func refusal(_ sql: String, on connection: PostgresConnection) -> String? {
        do {
            try connection.execute(unsafeSQL: sql)
            return nil
        } catch let error as PostgresError {
            return error.sqlState ?? "no SQLSTATE: \(error.message)"
        } catch {
            return "\(error)"
        }
    }

    @Test("the service role cannot disable the audit trigger, edit, delete or truncate audit entries, or run DDL")
    func auditLogIsInsertOnly() throws {
        let (database, owner, service) = try granted()
        defer { database.drop() }
        try AuditLog.append(
            actor: "test", action: "test.done", subject: "x", details: ["a": "1"], at: Date(), connection: service)
        #expect(try AuditLog.seal(connection: service, wait: true) == 1)  // sealing is what it may change
        try AuditLog.append(
            actor: "test", action: "test.done", subject: "y", details: [:], at: Date(), connection: service)

        #expect(refusal("ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update", on: service) == "42501")
        #expect(refusal("ALTER TABLE audit_log DISABLE TRIGGER ALL", on: service) == "42501")
        #expect(refusal("SET session_replication_role = replica", on: service) == "42501")
        #expect(refusal("UPDATE audit_log SET details = '{}' WHERE subject = 'x'", on: service) == "42501")
        #expect(refusal("UPDATE audit_log SET actor = 'someone' WHERE subject = 'y'", on: service) == "42501")
        // The chain columns it may set: only once, on an unsealed entry (the trigger).
        #expect(refusal("UPDATE audit_log SET hash = hash WHERE subject = 'x'", on: service) == "42501")
        #expect(refusal("DELETE FROM audit_log", on: service) == "42501")
        #expect(refusal("TRUNCATE audit_log", on: service) == "42501")
        // The archive's anchors are read by the sealer, never written by the service.
        #expect(
            refusal(
                "INSERT INTO audit_log_archives (through_seq, first_seq, through_hash, file, sha256) VALUES (1, 1, decode(repeat('00', 32), 'hex'), 'f', repeat('0', 64))",
                on: service) == "42501")
        // Not even the owner deletes an entry no archive anchor covers.
        #expect(refusal("DELETE FROM audit_log WHERE subject = 'x'", on: owner) == "42501")
        #expect(refusal("DROP TRIGGER audit_log_no_update ON audit_log", on: service) == "42501")
        #expect(
            refusal(
                "CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$",
                on: service) == "42501")
        #expect(refusal("CREATE TABLE sneaky (x int)", on: service) == "42501")
        #expect(refusal("ALTER TABLE cards ADD COLUMN sneaky int", on: service) == "42501")
        #expect(refusal("TRUNCATE cards CASCADE", on: service) == "42501")
        #expect(
            refusal(
                "INSERT INTO issuerd_schema_migrations (version, name, checksum) VALUES (9999, 'x', 'y')", on: service)
                == "42501")
        #expect(try ServiceRole.excess(on: service) == [])

        let rows = try owner.query("SELECT count(*) AS n FROM audit_log WHERE seq IS NOT NULL").first!
        #expect(try rows.decode("n", as: Int64.self) == 1)
        // The owner, by contrast, could disable the trigger: what the service must not hold.
        #expect(try ServiceRole.excess(on: owner).contains { $0.hasPrefix("owns ") })
    }

    @Test("db grant takes back what was given by hand, and covers the tables a later migration creates")
    func grantIsExact() throws {
        let (database, owner, service) = try granted()
        defer { database.drop() }
        try owner.execute(unsafeSQL: "GRANT TRUNCATE, TRIGGER ON cards TO \(TestServiceRole.name)")
        try owner.execute(unsafeSQL: "GRANT UPDATE, DELETE ON audit_log TO \(TestServiceRole.name)")
        let before = try ServiceRole.excess(on: service)
        #expect(before.contains { $0.hasPrefix("may truncate") })
        #expect(before.contains("may edit or delete audit_log entries"))
        try ServiceRole.grant(role: TestServiceRole.name, on: owner)
        #expect(try ServiceRole.excess(on: service) == [])

        // The next release's migration, run as the owner.
        try owner.execute(unsafeSQL: "CREATE TABLE later_things (id bigserial PRIMARY KEY, note text)")
        try service.execute(unsafeSQL: "INSERT INTO later_things (note) VALUES ('x')")
        try service.execute(unsafeSQL: "UPDATE later_things SET note = 'y'")
        #expect(refusal("TRUNCATE later_things", on: service) == "42501")
        #expect(try ServiceRole.excess(on: service) == [])
    }

    @Test("db grant refuses a missing role, the connected role, a bad name and an unmigrated database")
    func grantRefusals() throws {
        let (database, owner, _) = try granted()
        defer { database.drop() }
        #expect(throws: ServiceRoleError.self) { try ServiceRole.grant(role: "no_such_role_here", on: owner) }
        #expect(throws: ServiceRoleError.self) { try ServiceRole.grant(role: "postgres", on: owner) }
        #expect(throws: ServiceRoleError.self) { try ServiceRole.grant(role: "x; DROP TABLE cards", on: owner) }
        let empty = try TestDatabase.create()
        defer { empty.drop() }
        let bare = try PostgresConnection(connectionString: empty.connectionString)
        #expect(throws: ServiceRoleError.self) { try ServiceRole.grant(role: TestServiceRole.name, on: bare) }
    }

    @Test("serve warns in one line when its role owns tables, and says nothing as the service role")
    func startWarning() throws {
        let message = "holds more than serving needs"
        let asService = LineCollector()
        let service = try TestApplication(logger: Logger(label: "test", minimumLevel: .warning, handler: asService))
        #expect(asService.count(of: message) == 0, "\(asService.lines)")

        let asOwner = LineCollector()
        _ = try TestApplication(
            environment: ["ISSUERD_DATABASE_URL": service.database.connectionString],
            logger: Logger(label: "test", minimumLevel: .warning, handler: asOwner))
        #expect(asOwner.count(of: message) == 1, "\(asOwner.lines)")
        let line = try #require(asOwner.lines.first { $0.contains(message) })
        #expect(line.contains("owns "))
        #expect(line.contains("issuerd db grant"))
    }

    @Test("serve as the service role refuses pending migrations with the way out; migrate as the owner applies them")
    func pendingMigrationsNeedTheOwner() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let service = try TestServiceRole.prepare(database)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-sql-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let sql = TestApplication.repositoryRoot.appendingPathComponent("sql")
        for file in try FileManager.default.contentsOfDirectory(atPath: sql.path) where file.hasSuffix(".sql") {
            try FileManager.default.copyItem(
                at: sql.appendingPathComponent(file), to: folder.appendingPathComponent(file))
        }
        try Data("CREATE TABLE release_next (id int);\n".utf8).write(to: folder.appendingPathComponent("9000_next.sql"))

        let refused = try CommandLineRunner.run(
            ["migrate", "--sql-dir", folder.path], environment: ["ISSUERD_DATABASE_URL": service])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("42501"), "\(refused.standardError)")

        let migrated = try CommandLineRunner.run(
            ["migrate", "--sql-dir", folder.path],
            environment: ["ISSUERD_DATABASE_URL": service, "ISSUERD_MIGRATE_DATABASE_URL": database.connectionString])
        #expect(migrated.status == 0, "\(migrated.standardError)")
        #expect(migrated.standardOutput.contains("applied 9000_next.sql"))
        // Up to date: the service role's check at start needs no DDL.
        let status = try CommandLineRunner.run(
            ["migrate", "--sql-dir", folder.path, "--status"], environment: ["ISSUERD_DATABASE_URL": service])
        #expect(status.status == 0, "\(status.standardError)")
    }

    @Test("issuerd db grant --role runs as the owner and prints what it gave")
    func grantCommand() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        _ = try TestServiceRole.prepare(database)
        let result = try CommandLineRunner.run(
            ["db", "grant", "--role", TestServiceRole.name],
            environment: ["ISSUERD_MIGRATE_DATABASE_URL": database.connectionString])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("GRANT UPDATE (seq, prev_hash, hash) ON audit_log"))
        #expect(result.lastLine == "role \(TestServiceRole.name) has what serving needs")
        let missing = try CommandLineRunner.run(
            ["db", "grant", "--role", "nobody_at_all"],
            environment: ["ISSUERD_MIGRATE_DATABASE_URL": database.connectionString])
        #expect(missing.status == 1)
        #expect(missing.standardError.contains("role nobody_at_all does not exist"))
        let usage = try CommandLineRunner.run(["db", "grant"], environment: [:])
        #expect(usage.status == 2)
    }
}
