import Foundation
import IssuerdCore
import IssuerdPostgres

/// A fresh, uniquely named database on the shared test server, so that tests running in
/// parallel never see each other's rows.
///
/// ```swift
/// let database = try TestDatabase.create()
/// defer { database.drop() }
/// let pool = database.makePool()
/// ```
public struct TestDatabase: Sendable {
    /// The environment variable `scripts/test` sets to the shared server's admin connection.
    public static let environmentVariable = "ISSUERD_TEST_DATABASE_URL"

    /// The database's name, `issuerd_test_` followed by 32 hex digits.
    public let name: String
    /// A conninfo string for this database.
    public let connectionString: String
    private let adminConnectionString: String

    /// Creates an empty database.
    ///
    /// - Throws: ``TestEnvironmentError`` when `ISSUERD_TEST_DATABASE_URL` is unset (the test
    ///   fails and says to run it through `scripts/test`), or ``PostgresError``.
    public static func create() throws -> TestDatabase {
        guard let admin = ProcessInfo.processInfo.environment[environmentVariable], !admin.isEmpty else {
            throw TestEnvironmentError(
                "\(environmentVariable) is not set: database tests need a PostgreSQL server; "
                    + "run them through scripts/test (e.g. scripts/test --filter IssuerdPostgresTests)")
        }
        return try create(admin: admin)
    }

    /// Creates an empty database on the server `admin` (a superuser's conninfo) reaches, e.g. a
    /// ``DisposablePostgresServer`` whose standby a test watches.
    public static func create(admin: String) throws -> TestDatabase {
        let name = "issuerd_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let connection = try PostgresConnection(connectionString: admin)
        // The name is generated above from hex digits only, so it is safe to splice in.
        try connection.execute(unsafeSQL: "CREATE DATABASE \"\(name)\"")
        let target = try PostgresConnectionString(admin).setting("dbname", to: name)
        return TestDatabase(name: name, connectionString: target.unsafeConnectionString, adminConnectionString: admin)
    }

    /// A pool on this database.
    ///
    /// - Parameters:
    ///   - size: Maximum connections.
    ///   - acquireTimeout: Wait for a free connection before `.poolTimeout`.
    public func makePool(size: Int = 4, acquireTimeout: Duration = .seconds(10)) -> PostgresPool {
        PostgresPool(
            configuration: PostgresPoolConfiguration(
                connectionString: connectionString, size: size, acquireTimeout: acquireTimeout),
            logger: .silent)
    }

    /// Polls every 20 ms until another session of this database (one or more) waits on a lock
    /// that backend `pid` holds, or `seconds` pass.
    ///
    /// From a connection of its own, one statement per transaction: `pg_stat_activity` is read
    /// once per transaction, so polling from the holder's open transaction keeps seeing the
    /// sessions as they were at its first look (a waiter that came later is never seen).
    ///
    /// - Returns: Whether one was seen waiting, and the sessions as they were at the end (for
    ///   the failure message).
    public func waitUntilBlocked(
        by pid: Int32, within seconds: Double = 60
    ) throws -> (waiting: Bool, activity: [String]) {
        let watcher = try PostgresConnection(connectionString: connectionString)
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let waiting =
                try watcher.query(
                    """
                    SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                      AND \(pid) = ANY(pg_blocking_pids(pid))
                    """
                ).count >= 1
            if waiting || Date() >= deadline {
                let activity = try watcher.query(
                    """
                    SELECT pid || ' ' || coalesce(wait_event_type, '-') || ' ' || coalesce(wait_event, '-') || ' ' || coalesce(state, '-')
                           || ' ' || left(query, 200) AS a
                    FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                    """
                ).map { try $0.decode("a", as: String.self) }
                return (waiting, activity)
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Drops the database, disconnecting anything still connected to it. Failures are ignored:
    /// a leftover database disappears with the throwaway server.
    public func drop() {
        guard let connection = try? PostgresConnection(connectionString: adminConnectionString) else { return }
        _ = try? connection.execute(unsafeSQL: "DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
    }
}

/// The test environment lacks something a test needs; the message says what and how to fix it.
public struct TestEnvironmentError: Error, CustomStringConvertible {
    /// What is missing and how to provide it.
    public let description: String

    /// Creates the error.
    public init(_ description: String) { self.description = description }
}
