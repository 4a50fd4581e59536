import Foundation
import IssuerdCore
import IssuerdPostgres

/// The analysts' read database (`ISSUERD_READ_DATABASE_URL`, normally a streaming standby) as
/// the running instance watches it: its own small pool, and how far behind the primary it is,
/// checked every ``interval`` for `/metrics` (`issuerd_read_replica_up`,
/// `issuerd_read_replica_lag_seconds`) and afresh for `GET /v1/admin/reads`, which the console
/// shows in its header.
final class ReadReplica: Sendable {
    /// One check of the read database.
    struct Reading: Sendable {
        /// What the server said; nil when it could not be reached or did not answer.
        var status: PostgresStandbyStatus?
        /// When the check ran.
        var checkedAt: Date
    }

    /// The pool the analysts' reads borrow from.
    let pool: PostgresPool
    private let last = Lock<Reading?>(nil)
    private let thread = BackgroundThread(name: "issuerd-read-replica")
    private let interval: TimeInterval
    private let clock: @Sendable () -> Date

    init(
        pool: PostgresPool, metrics: MetricsRegistry, interval: TimeInterval = 5, clock: @escaping @Sendable () -> Date
    ) {
        self.pool = pool
        self.interval = interval
        self.clock = clock
        metrics.gauge(
            "issuerd_read_replica_up",
            help: "1 when the last check of ISSUERD_READ_DATABASE_URL (every 5 s) got an answer, else 0."
        ) {
            [([], self.lastReading?.status == nil ? 0 : 1)]
        }
        metrics.gauge(
            "issuerd_read_replica_lag_seconds",
            help:
                "How far the read database's replay was behind the primary at its last check: 0 when it had replayed all it received, else the time since the last commit it replayed (absent while it does not answer)."
        ) {
            guard let status = self.lastReading?.status else { return [] }
            return [([], status.lagSeconds ?? 0)]
        }
    }

    /// The same series for an instance without a read database, so every series is there from
    /// the first scrape: the analysts read on the primary, which is never behind itself (its
    /// health is `issuerd_ready`'s), so up 1 and lag 0.
    static func registerWithoutReplica(metrics: MetricsRegistry) {
        metrics.gauge(
            "issuerd_read_replica_up",
            help: "1 when the last check of ISSUERD_READ_DATABASE_URL (every 5 s) got an answer, else 0; 1 without one."
        ) { [([], 1)] }
        metrics.gauge(
            "issuerd_read_replica_lag_seconds",
            help: "How far the analysts' read database was behind the primary at its last check; 0 without one."
        ) { [([], 0)] }
    }

    /// The last check's result, nil before the first.
    var lastReading: Reading? { last.withLock { $0 } }

    /// Checks the read database now (within the pool's acquire timeout) and keeps the result.
    @discardableResult
    func check() -> Reading {
        let status = try? pool.withConnection { try $0.standbyStatus() }
        let reading = Reading(status: status, checkedAt: clock())
        last.withLock { $0 = reading }
        return reading
    }

    /// A check now, then one every ``interval`` on a thread of its own.
    func start() {
        check()
        _ = thread.start { [self] in
            while true {
                thread.sleep(seconds: interval)
                if thread.stopRequested { break }
                check()
            }
        }
    }

    func stop(timeout: Duration) {
        _ = thread.stop(timeout: timeout)
        pool.close()
    }
}
