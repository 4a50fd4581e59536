import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk
import Synchronization

/// Reads a period into the ``BacktestWindowCache`` in the background, ahead of the analyst's
/// backtest of it (`POST /v1/admin/rules/backtest/prepare`, sent by the console's Backtest page
/// when it opens and when its period changes): by the time the candidate is pasted, the period's
/// complete hours are parsed, and the first backtest takes them from memory.
///
/// One preparation at a time per instance (a request while one runs starts nothing), on a thread
/// of its own (it blocks on PostgreSQL for about as long as a backtest's read), with the
/// backtest's own limit; what it reads is checked again by the backtest like any kept hour.
final class BacktestPreparation: Sendable {
    private let cache: BacktestWindowCache
    private let database: PostgresPool
    private let logger: Logger
    private let running = Mutex(false)
    private let finished = Atomic(0)

    init(cache: BacktestWindowCache, database: PostgresPool, logger: Logger) {
        self.cache = cache
        self.database = database
        self.logger = logger
    }

    /// Starts reading `[since, until)` for a backtest with `current`'s velocity queries, unless
    /// a preparation is running already, the cache keeps nothing, or the period holds no complete
    /// hour to keep.
    ///
    /// - Returns: Whether one was started.
    func start(current: Ruleset, since: Date, until: Date, limit: Int, now: Date) -> Bool {
        guard cache.capacity > 0, BacktestWindowCache.keptHours(since: since, until: until, now: now) != nil else { return false }
        let started = running.withLock { running in
            guard !running else { return false }
            running = true
            return true
        }
        guard started else { return false }
        let thread = Thread { [self] in
            run(current: current, since: since, until: until, limit: limit, now: now)
            running.withLock { $0 = false }
            finished.add(1, ordering: .releasing)
        }
        thread.name = "issuerd-backtest-prepare"
        thread.start()
        return true
    }

    /// Whether a preparation is running.
    var isRunning: Bool { running.withLock { $0 } }

    /// How many preparations have ended since start (for tests and shutdown).
    var finishedCount: Int { finished.load(ordering: .acquiring) }

    /// Waits up to `timeout` for a running preparation to end (shutdown, before the pool closes).
    func wait(timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        while isRunning, ContinuousClock.now < deadline { usleep(5_000) }
    }

    private func run(current: Ruleset, since: Date, until: Date, limit: Int, now: Date) {
        let started = ContinuousClock.now
        let before = cache.statistics
        do {
            let (attempts, tooMany) = try HistoryBacktest.prepare(
                current: current, since: since, until: until, limit: limit, database: database, cache: cache, now: now)
            let after = cache.statistics
            let elapsed = ContinuousClock.now - started
            let milliseconds = Int(elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
            if tooMany {
                logger.info("backtest period not prepared: more attempts than a backtest replays",
                            ["attempts": .int(attempts), "limit": .int(limit), "elapsedMs": .int(milliseconds)])
            } else {
                logger.info("backtest period prepared", [
                    "attempts": .int(attempts), "hoursRead": .int(after.misses - before.misses), "hoursKept": .int(after.hits - before.hits),
                    "elapsedMs": .int(milliseconds),
                ])
            }
        } catch {
            logger.warning("backtest period not prepared", ["error": "\(error)"])
        }
    }
}
