import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport

/// The role the tests' applications serve as: one per test server, given on each test
/// database exactly what `issuerd db grant` gives, so every API suite proves that serving
/// needs no more.
enum TestServiceRole {
    static let name = "issuerd_test_service"

    /// Migrates `database` as its owner, creates the role if no test did yet, runs the grant,
    /// and returns a connection string for the role.
    static func prepare(_ database: TestDatabase) throws -> String {
        let pool = database.makePool(size: 1)
        defer { pool.close() }
        try Migrator(
            directory: TestApplication.repositoryRoot.appendingPathComponent("sql"),
            logger: Logger(label: "test", minimumLevel: .critical, handler: DiscardingLogHandler())
        ).migrate(using: pool)
        try pool.withConnection { connection in
            // Suites start in parallel: a second CREATE ROLE finds it made (or racing).
            try connection.execute(
                unsafeSQL: """
                    DO $$ BEGIN CREATE ROLE \(name) LOGIN;
                    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$
                    """)
            try ServiceRole.grant(role: name, on: connection)
        }
        return try PostgresConnectionString(database.connectionString).setting("user", to: name)
            .unsafeConnectionString
    }
}
