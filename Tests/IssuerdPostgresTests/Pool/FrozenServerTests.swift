import Foundation
import IssuerdPostgres
import IssuerdTestSupport
import Testing

/// A server that stops answering without closing its connections (SIGSTOP: a frozen process, a
/// paused VM, a storage stall): keepalives and `tcp_user_timeout` see a kernel that still
/// acknowledges, so only the client-side deadlines end the waits. Each test has its own server
/// (stopping the shared one would stall every test running in parallel).
///
/// A safety net thaws the server after ``thawAfter`` whatever happens, so a wait without a
/// deadline ends (and the test fails on its timing) instead of hanging the run.
@Suite struct FrozenServerTests {
    static let thawAfter = 8.0

    /// Freezes `server` now and thaws it after ``thawAfter`` seconds on a thread of its own.
    private func freezeWithSafetyNet(_ server: DisposablePostgresServer) throws -> DispatchSemaphore {
        try server.freeze()
        let thawed = DispatchSemaphore(value: 0)
        let thread = Thread {
            Thread.sleep(forTimeInterval: Self.thawAfter)
            try? server.thaw()
            thawed.signal()
        }
        thread.start()
        return thawed
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let (whole, fraction) = (ContinuousClock.now - start).components
        return Double(whole) + Double(fraction) / 1e18
    }

    @Test func aStatementAgainstAFrozenServerEndsAtItsDeadlineAndItsConnectionIsClosed() throws {
        let server = try DisposablePostgresServer()
        defer { server.destroy() }
        let pool = PostgresPool(
            configuration: PostgresPoolConfiguration(
                connectionString: server.connectionString, size: 2, acquireTimeout: .seconds(2),
                statementTimeout: .seconds(1)),
            logger: .silent)
        defer { pool.close() }
        let before = try pool.withConnection {
            try $0.query("SELECT pg_backend_pid() AS pid")[0].decode("pid", as: Int32.self)
        }
        #expect(pool.statistics.idle == 1)

        let thawed = try freezeWithSafetyNet(server)
        let start = ContinuousClock.now
        let error = postgresError { try pool.withConnection { _ = try $0.query("SELECT 1") } }
        let waited = seconds(since: start)
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(waited >= 0.9 && waited < 1.8, "the statement waited \(waited) s for a 1 s deadline")
        // Closed, not lent again: the pool has nothing idle and nothing lent.
        #expect(pool.statistics.idle == 0)
        #expect(pool.statistics.inUse == 0)

        try server.thaw()
        let after = try pool.withConnection {
            try $0.query("SELECT pg_backend_pid() AS pid")[0].decode("pid", as: Int32.self)
        }
        #expect(after != before, "the abandoned session was used again")
        #expect(thawed.wait(timeout: .now() + Self.thawAfter + 5) == .success)
    }

    @Test func aPipelinedTransactionsSecondRoundTripAgainstAFrozenServerEndsAtItsDeadline() throws {
        let server = try DisposablePostgresServer()
        defer { server.destroy() }
        let connection = try PostgresConnection(
            connectionString: server.connectionString, statementTimeout: .milliseconds(800))
        try connection.execute(unsafeSQL: "CREATE TABLE frozen_writes (id int PRIMARY KEY)")
        var thawed: DispatchSemaphore?
        let start = ContinuousClock.now
        let error = postgresError {
            _ = try connection.pipelinedTransaction(opening: ["SELECT 1 AS one"]) { _, _ in
                thawed = try freezeWithSafetyNet(server)
                return ((), ["INSERT INTO frozen_writes (id) VALUES (1)"])
            }
        }
        let waited = seconds(since: start)
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(waited < 1.6, "the commit waited \(waited) s for a 0.8 s deadline")
        #expect(!connection.isConnected)
        // Nothing more goes on the abandoned session, and nothing waits for it.
        let refused = ContinuousClock.now
        #expect(postgresError { _ = try connection.query("SELECT 1") }?.code == .timedOut)
        #expect(seconds(since: refused) < 0.1)
        try server.thaw()
        _ = thawed?.wait(timeout: .now() + Self.thawAfter + 5)
    }

    @Test func connectingToAFrozenServerEndsWithinTheAcquireTimeout() throws {
        let server = try DisposablePostgresServer()
        defer { server.destroy() }
        // Nothing open yet: the first borrower has to connect, and the postmaster is stopped.
        let pool = PostgresPool(
            configuration: PostgresPoolConfiguration(
                connectionString: server.connectionString, size: 2, acquireTimeout: .milliseconds(700),
                connectTimeout: .seconds(5), statementTimeout: .seconds(5)),
            logger: .silent)
        defer { pool.close() }
        let thawed = try freezeWithSafetyNet(server)
        let start = ContinuousClock.now
        let error = postgresError { try pool.ping() }
        let waited = seconds(since: start)
        #expect(error?.code == .unavailable, "\(String(describing: error))")
        #expect(waited >= 0.6 && waited < 1.4, "connecting waited \(waited) s within a 0.7 s acquire timeout")
        #expect(pool.statistics.inUse == 0)

        try server.thaw()
        try pool.ping()
        #expect(thawed.wait(timeout: .now() + Self.thawAfter + 5) == .success)
    }

    @Test func aRequestWhoseStatementWasAbandonedWaitsForNothingMore() throws {
        let server = try DisposablePostgresServer()
        defer { server.destroy() }
        let pool = PostgresPool(
            configuration: PostgresPoolConfiguration(
                connectionString: server.connectionString, size: 2, acquireTimeout: .seconds(2),
                statementTimeout: .milliseconds(600)),
            logger: .silent)
        defer { pool.close() }
        try pool.ping()
        let thawed = try freezeWithSafetyNet(server)
        let (first, second, secondWaited) = PostgresRequestScope.run(waited: .zero) {
            let first = postgresError { try pool.ping() }
            // The clean-up a failed request does (an idempotency claim's release): without the
            // scope it would open a new connection and wait out the connect, or another deadline.
            let start = ContinuousClock.now
            let second = postgresError { try pool.ping() }
            return (first, second, seconds(since: start))
        }
        #expect(first?.code == .timedOut)
        #expect(second?.code == .timedOut, "\(String(describing: second))")
        #expect(secondWaited < 0.1, "the second statement waited \(secondWaited) s")
        // Outside the scope (another request) a borrower tries again, within its own bounds.
        let outside = ContinuousClock.now
        #expect(postgresError { try pool.ping() } != nil)
        #expect(seconds(since: outside) < 2.5)

        try server.thaw()
        try pool.ping()
        #expect(thawed.wait(timeout: .now() + Self.thawAfter + 5) == .success)
    }

    @Test func aRequestThatWaitedBeforeItBeganHasThatMuchLessForAConnection() throws {
        try withTestPool(size: 1, acquireTimeout: .seconds(2)) { pool in
            try pool.withConnection { _ in
                // The only connection is lent: a borrower must wait, and this one already waited 1.6 s.
                let start = ContinuousClock.now
                let error = PostgresRequestScope.run(waited: .milliseconds(1_600)) {
                    postgresError { try pool.ping() }
                }
                let waited = seconds(since: start)
                #expect(error?.code == .poolTimeout)
                #expect(waited >= 0.3 && waited < 1.0, "waited \(waited) s with 0.4 s of the 2 s timeout left")
            }
        }
    }

    @Test func anAbandonedStatementIsCancelledOnALiveServer() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let connection = try PostgresConnection(
            connectionString: database.connectionString, statementTimeout: .milliseconds(500))
        let pid = connection.backendProcessID
        let start = ContinuousClock.now
        let error = postgresError { _ = try connection.query("SELECT pg_sleep(60)") }
        #expect(error?.code == .timedOut)
        #expect(seconds(since: start) < 1.2)
        // The cancel request ends the sleep at once (the backend then finds its client gone);
        // without it the session would sleep on for a minute.
        let watcher = try PostgresConnection(connectionString: database.connectionString)
        var running = true
        for _ in 0..<100 where running {
            running =
                try watcher.query(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE pid = \(pid) AND state = 'active'"
                )[0].decode("n", as: Int.self) > 0
            if running { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(!running, "backend \(pid) still runs the abandoned statement 5 s later")
    }

    @Test func aStatementWithinItsDeadlineAndOneWithoutAnyRunToTheEnd() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let connection = try PostgresConnection(
            connectionString: database.connectionString, statementTimeout: .seconds(1))
        _ = try connection.query("SELECT pg_sleep(0.3)")
        try connection.withStatementTimeout(nil) { _ = try connection.query("SELECT pg_sleep(1.3)") }
        #expect(connection.statementTimeout == .seconds(1))
        #expect(connection.isConnected)
    }
}
