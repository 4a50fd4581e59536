import Foundation
import IssuerdCore
import IssuerdPostgres

/// A fresh test database with issuerd's schema (the repository's `sql/` applied) and a pool on
/// it, dropped when the value goes: for a module's tests that read and write its tables without
/// starting the whole service.
public final class MigratedDatabase: Sendable {
    /// The database.
    public let database: TestDatabase
    /// A pool on it.
    public let pool: PostgresPool

    /// The repository's root, where `sql/` and `rules/` are.
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Creates the database and applies every migration.
    ///
    /// - Parameter poolSize: Connections of ``pool``.
    /// - Throws: ``TestEnvironmentError`` outside `scripts/test`, ``PostgresError`` or a
    ///   migration's error.
    public init(poolSize: Int = 2) throws {
        let database = try TestDatabase.create()
        let pool = database.makePool(size: poolSize)
        do {
            _ = try Migrator(
                directory: Self.repositoryRoot.appendingPathComponent("sql"),
                logger: Logger(label: "test", minimumLevel: .critical, handler: DiscardingLogHandler())
            ).migrate(using: pool)
        } catch {
            pool.close()
            database.drop()
            throw error
        }
        self.database = database
        self.pool = pool
    }

    deinit {
        pool.close()
        database.drop()
    }
}
