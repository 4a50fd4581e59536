import Foundation
import IssuerdCore
import IssuerdPostgres

/// `issuerd migrate`: applies the numbered SQL files in `sql/` as the owner role
/// (`ISSUERD_MIGRATE_DATABASE_URL`, else `ISSUERD_DATABASE_URL`).
enum MigrateCommand: CommandDefinition {
    static let name = "migrate"
    static let summary = "apply the SQL migrations in sql/ as the owner role (ISSUERD_MIGRATE_DATABASE_URL)"
    static let usage = """
        issuerd migrate [--sql-dir DIR] [--status]

        Applies every migration in DIR that the database has not recorded yet,
        each in its own transaction, under an advisory lock, and refuses to run if an applied
        migration's file changed or is missing.

          --sql-dir DIR   folder of NNNN_name.sql files (default: ISSUERD_SQL_DIR, else sql)
          --status        list every migration as applied, pending, changed or missing; apply nothing

        Environment:
          ISSUERD_MIGRATE_DATABASE_URL   the owner role's libpq URI or conninfo, e.g.
                                         postgresql://issuerd_owner@localhost/issuerd; the tables
                                         it creates are its own (docs/configuration.md, Database roles)
          ISSUERD_DATABASE_URL           used when ISSUERD_MIGRATE_DATABASE_URL is not set
          ISSUERD_SQL_DIR                the migrations folder when --sql-dir is not given (as `serve` reads it)
        """

    static func run(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["sql-dir"], flags: ["status"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        let url = try ownerDatabaseURL()
        // The same folder `serve` migrates from: --sql-dir, else ISSUERD_SQL_DIR, else sql.
        let fromEnvironment = ProcessInfo.processInfo.environment["ISSUERD_SQL_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        let directory = URL(fileURLWithPath: arguments.option("sql-dir") ?? fromEnvironment ?? "sql")
        let logger = Logger(label: "issuerd.migrate", minimumLevel: .warning, handler: JSONLogHandler.standardError)
        let pool = PostgresPool(
            configuration: PostgresPoolConfiguration(connectionString: url, size: 1), logger: logger)
        defer { pool.close() }
        let migrator = Migrator(directory: directory, logger: logger)
        do {
            if arguments.flag("status") {
                return try printStatus(migrator.status(using: pool))
            }
            let applied = try migrator.migrate(using: pool)
            for migration in applied { print("applied \(migration.fileName)") }
            print(applied.isEmpty ? "database is up to date" : "applied \(applied.count) migration(s)")
            return 0
        } catch let error as PostgresError {
            throw CommandFailure(error.message + (error.sqlState.map { " (SQLSTATE \($0))" } ?? ""))
        }
    }

    /// The owner role's connection: `ISSUERD_MIGRATE_DATABASE_URL`, else `ISSUERD_DATABASE_URL`
    /// (one role for everything, as on a development machine).
    static func ownerDatabaseURL() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        for key in ["ISSUERD_MIGRATE_DATABASE_URL", "ISSUERD_DATABASE_URL"] {
            if let url = environment[key], !url.isEmpty { return url }
        }
        throw CommandFailure(
            "ISSUERD_MIGRATE_DATABASE_URL is not set (the owner role's libpq URI, e.g. postgresql://issuerd_owner@localhost/issuerd)"
        )
    }

    private static func printStatus(_ report: [MigrationStatus]) -> Int32 {
        var healthy = true
        for entry in report {
            let state: String
            switch entry.state {
            case .applied(let date): state = "applied  " + date.formatted(.iso8601)
            case .pending: state = "pending"
            case .changed:
                state = "CHANGED since applied"
                healthy = false
            case .missingFile:
                state = "MISSING file"
                healthy = false
            }
            print(
                entry.fileName.padding(toLength: max(entry.fileName.count, 40), withPad: " ", startingAt: 0) + " "
                    + state)
        }
        if report.isEmpty { print("no migrations") }
        return healthy ? 0 : 1
    }
}
