import Foundation
import IssuerdCore

/// A fixed-capacity pool of ``PostgresConnection``s for synchronous callers (HTTP worker
/// threads).
///
/// Connections open lazily. A connection that died (server restart, network loss) is
/// discarded instead of returned, and an idle one is checked before reuse, so during an outage
/// callers get ``PostgresError/Code/unavailable`` after one short connect attempt and, once
/// the server is back, the next call reconnects without restarting the process.
///
/// @unchecked Sendable: `state` is read and written only while `condition` is locked; the
/// configuration and logger are immutable; connections are used by one borrower at a time.
public final class PostgresPool: @unchecked Sendable {
    /// The configuration the pool was built with.
    public let configuration: PostgresPoolConfiguration
    private let logger: Logger
    private let condition = NSCondition()
    private var state: PoolState<PostgresConnection>
    /// When a borrower last saw ``PostgresError/Code/insufficientResources``; guarded by `condition`.
    private var resourceFailure: ContinuousClock.Instant?
    private let observer: PostgresPoolObserver?

    /// Creates a pool; no connection opens until the first borrower asks.
    ///
    /// - Parameters:
    ///   - configuration: Connection string, capacity and timeouts.
    ///   - logger: Receives debug lines about connections opened and discarded.
    ///   - observer: Told how long each borrower waited, and when one gave up (metrics).
    public init(configuration: PostgresPoolConfiguration, logger: Logger, observer: PostgresPoolObserver? = nil) {
        self.configuration = configuration
        self.logger = logger
        self.observer = observer
        self.state = PoolState(capacity: configuration.size)
    }

    deinit { close() }

    /// Lends a connection to `body` and takes it back afterwards, even when `body` throws.
    ///
    /// A transaction left open by `body` is rolled back; a lost connection is discarded.
    /// - Returns: What `body` returned.
    /// - Throws: ``PostgresError/Code/poolTimeout`` when no connection frees up in time,
    ///   ``PostgresError/Code/unavailable`` when none can be opened, or what `body` threw.
    @discardableResult
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try acquire()
        defer { release(connection) }
        do {
            return try body(connection)
        } catch let error as PostgresError where error.code == .insufficientResources {
            condition.lock()
            resourceFailure = .now
            condition.unlock()
            throw error
        }
    }

    /// When a statement last failed for want of disk, memory or another server resource
    /// (SQLSTATE class 53), until a ``probeWrite()`` succeeds; nil when none did since.
    public var lastResourceFailure: ContinuousClock.Instant? {
        condition.lock()
        defer { condition.unlock() }
        return resourceFailure
    }

    /// Checks that the database can take a write that needs new space: a fresh temporary table
    /// gets a row (its file extended by a page, as a growing table's is), all rolled back.
    /// Temporary, so the service role, which may not create tables in the schema, can run it. `SELECT 1` still
    /// answers on a full disk; this fails with ``PostgresError/Code/insufficientResources`` there.
    /// A success forgets ``lastResourceFailure``.
    ///
    /// - Throws: ``PostgresError`` when the write fails.
    public func probeWrite() throws {
        let table = "issuerd_write_probe_\(UInt32.random(in: 0...UInt32.max))"
        try withConnection { connection in
            try connection.execute(unsafeSQL: "BEGIN")
            defer { _ = try? connection.execute(unsafeSQL: "ROLLBACK") }
            try connection.execute(unsafeSQL: "CREATE TEMPORARY TABLE \(table) (probe integer)")
            try connection.execute(unsafeSQL: "INSERT INTO \(table) VALUES (1)")
        }
        condition.lock()
        resourceFailure = nil
        condition.unlock()
    }

    /// Runs `body` in a transaction, retrying the whole transaction on a serialization
    /// failure or deadlock with a short jittered backoff, and once at once when a schema change
    /// (a migration applied meanwhile) invalidated one of its prepared statements.
    ///
    /// - Parameters:
    ///   - isolation: The isolation level for every attempt.
    ///   - maxAttempts: Attempts in total (at least 1).
    ///   - body: The work; it may run several times, so it must not have effects outside
    ///     the database that cannot be repeated.
    /// - Returns: What the committed attempt of `body` returned.
    /// - Throws: The last attempt's error, or a non-retryable one at once.
    @discardableResult
    public func transaction<T>(
        isolation: IsolationLevel = .readCommitted, maxAttempts: Int = 5, _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        var attempt = 1
        var replanned = false
        while true {
            do {
                return try withConnection { try $0.transaction(isolation: isolation, body) }
            } catch let error as PostgresError where error.isInvalidatedPlan && !replanned {
                // The failed statement was forgotten; the next attempt prepares it afresh.
                logger.debug("postgres transaction retried after a schema change", ["sqlstate": "0A000"])
                replanned = true
            } catch let error as PostgresError where error.isTransient && attempt < maxAttempts {
                logger.debug(
                    "postgres transaction retried", ["attempt": .int(attempt), "code": .string(error.code.name)])
                Thread.sleep(forTimeInterval: Self.backoff(attempt: attempt))
                attempt += 1
            }
        }
    }

    /// Checks that the database answers (`SELECT 1`), for readiness probes.
    ///
    /// - Throws: ``PostgresError`` when it does not.
    public func ping() throws {
        try withConnection { _ = try $0.query("SELECT 1") }
    }

    /// The capacity, connections lent out (or being opened), and idle open connections.
    public var statistics: (size: Int, inUse: Int, idle: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (state.capacity, state.leased, state.idle.count)
    }

    /// Callers currently waiting for a connection.
    var waitingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.waiters
    }

    /// Closes idle connections and refuses new borrowers; lent connections close on return.
    public func close() {
        condition.lock()
        let idle = state.close()
        condition.broadcast()
        condition.unlock()
        if !idle.isEmpty { logger.debug("postgres pool closed", ["closed_connections": .int(idle.count)]) }
    }

    /// Runs `body` with `connection` (inside a REPEATABLE READ or SERIALIZABLE transaction) and
    /// up to `extra` more connections that see the same snapshot (`pg_export_snapshot` and
    /// `SET TRANSACTION SNAPSHOT`), so that one consistent read can use several server
    /// processes at once.
    ///
    /// Spare capacity only: a connection is taken only while nobody waits for one and another
    /// stays free (or can still be opened) for the next borrower, and never by waiting, so a
    /// long read cannot hold up the requests the pool serves, and two callers cannot hold one
    /// connection each while waiting for the other's. Otherwise, and under READ COMMITTED
    /// (whose snapshot is per statement), `body` gets `connection` alone.
    ///
    /// The extra connections are read only; their transactions end, and they return to the
    /// pool, when `body` returns or throws.
    /// - Returns: What `body` returned.
    /// - Throws: ``PostgresError`` from exporting the snapshot, or what `body` threw.
    public func withSharedSnapshot<T>(
        of connection: PostgresConnection, extra: Int, _ body: ([PostgresConnection]) throws -> T
    ) throws -> T {
        guard extra > 0 else { return try body([connection]) }
        let row = try connection.query(
            """
            SELECT current_setting('transaction_isolation') IN ('repeatable read', 'serializable') AS shareable,
                   CASE WHEN current_setting('transaction_isolation') IN ('repeatable read', 'serializable')
                        THEN pg_export_snapshot() END AS snapshot
            """
        ).first
        guard let row, try row.decode("shareable", as: Bool.self),
            let snapshot = try row.decode("snapshot", as: String?.self)
        else {
            return try body([connection])
        }
        // An id is hex digits and dashes (e.g. 00000003-0000001B-1); never anything to quote.
        guard !snapshot.isEmpty, snapshot.allSatisfy({ $0.isASCII && ($0.isHexDigit || $0 == "-") }) else {
            return try body([connection])
        }
        var joined: [PostgresConnection] = []
        defer {
            for spare in joined {
                spare.rollbackQuietly()
                release(spare)
            }
        }
        for _ in 0..<extra {
            guard hasSpareCapacity, let spare = try? acquire(waiting: false) else { break }
            do {
                try spare.execute(unsafeSQL: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                try spare.execute(unsafeSQL: "SET TRANSACTION SNAPSHOT '\(snapshot)'")
                joined.append(spare)
            } catch {
                logger.debug("postgres shared snapshot not joined", ["error": .string(String(describing: error))])
                spare.rollbackQuietly()
                release(spare)
                break
            }
        }
        return try body([connection] + joined)
    }

    /// Whether a connection can be lent without leaving the next borrower to wait: nobody
    /// waits, and after lending one, another is idle or can be opened.
    private var hasSpareCapacity: Bool {
        condition.lock()
        defer { condition.unlock() }
        return state.waiters == 0 && state.capacity - state.leased >= 2  // idle ones plus those not yet opened
    }

    /// Lends an idle connection, or opens one, within the acquire timeout; with `waiting` false
    /// only what is available at once.
    ///
    /// Inside a ``PostgresRequestScope`` the request's earlier wait counts against the timeout,
    /// and a request that already gave up on the database gets nothing.
    private func acquire(waiting: Bool = true) throws -> PostgresConnection {
        let scope = PostgresRequestScope.current
        if let scope, scope.gaveUp {
            throw PostgresError(
                code: .timedOut, message: "an earlier statement of this request got no answer from the database in time"
            )
        }
        let budget = waiting ? max(.zero, configuration.acquireTimeout - (scope?.waited ?? .zero)) : .zero
        let started = ContinuousClock.now
        let deadline = started + budget
        // Only borrowers that wait are reported: a spare connection taken when free is no wait.
        let observer = waiting ? observer : nil
        while true {
            condition.lock()
            var action = state.acquire()
            while case .wait = action {
                let left = deadline - ContinuousClock.now
                guard left > .zero else {
                    condition.unlock()
                    observer?.timedOut()
                    throw PostgresError(
                        code: .poolTimeout,
                        message:
                            "no database connection free within \(configuration.acquireTimeout) (pool size \(state.capacity))"
                    )
                }
                state.waiters += 1
                _ = condition.wait(until: Date().addingTimeInterval(left.timeInterval))
                state.waiters -= 1
                action = state.acquire()
            }
            condition.unlock()

            switch action {
            case .use(let connection):
                if connection.isHealthyWhileIdle() {
                    observer?.acquired(.now - started)
                    return connection
                }
                logger.debug(
                    "postgres idle connection discarded", ["backend_pid": .int(Int(connection.backendProcessID))])
                slotFreed()
            case .open:
                // Waiting for a slot and connecting share the acquire timeout.
                let connectTimeout =
                    waiting
                    ? min(configuration.connectTimeout, deadline - ContinuousClock.now) : configuration.connectTimeout
                do {
                    guard connectTimeout > .zero else {
                        throw PostgresError(
                            code: .unavailable,
                            message: "no time left to connect within \(configuration.acquireTimeout)")
                    }
                    let connection = try PostgresConnection(
                        connectionString: configuration.connectionString, connectTimeout: connectTimeout,
                        deadPeerTimeout: configuration.deadPeerTimeout,
                        statementTimeout: configuration.statementTimeout,
                        logger: logger)
                    observer?.acquired(.now - started)
                    return connection
                } catch {
                    slotFreed()
                    throw error
                }
            case .closed:
                throw PostgresError(code: .unavailable, message: "the connection pool is closed")
            case .wait:
                continue
            }
        }
    }

    private func release(_ connection: PostgresConnection) {
        let reusable = connection.prepareForReuse()
        if !reusable {
            logger.debug(
                "postgres connection discarded after use", ["backend_pid": .int(Int(connection.backendProcessID))])
        }
        condition.lock()
        let unwanted = state.release(reusable ? connection : nil)
        condition.signal()
        condition.unlock()
        // Dropping the last reference finishes the PGconn outside the lock.
        _ = unwanted
    }

    private func slotFreed() {
        condition.lock()
        state.openFailed()
        condition.signal()
        condition.unlock()
    }

    /// Exponential from 2 ms, capped at 64 ms, times a jitter of 0.5–1.5 so that colliding
    /// transactions do not collide again in lockstep.
    static func backoff(attempt: Int) -> TimeInterval {
        let base = 0.002 * Double(1 << min(max(attempt - 1, 0), 5))
        return base * Double.random(in: 0.5...1.5)
    }
}

/// What a ``PostgresPool`` reports about its borrowers, for metrics: how long each waited for a
/// connection (for a free one, and to open one), and each that gave up after the acquire timeout.
public struct PostgresPoolObserver: Sendable {
    /// A connection was lent after this wait.
    public var acquired: @Sendable (Duration) -> Void
    /// A borrower got ``PostgresError/Code/poolTimeout``.
    public var timedOut: @Sendable () -> Void

    /// Creates an observer from its two callbacks (called on the borrower's thread, unlocked).
    public init(acquired: @escaping @Sendable (Duration) -> Void, timedOut: @escaping @Sendable () -> Void) {
        self.acquired = acquired
        self.timedOut = timedOut
    }
}
