import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk

/// Reads a period into the ``BacktestWindowCache`` in the background, ahead of the analyst's
/// backtest of it (`POST /v1/admin/rules/backtest/prepare`, sent by the console's Backtest page
/// when it opens and when its period changes): by the time the candidate is pasted, the period's
/// complete hours are parsed, and the first backtest takes them from memory.
///
/// One preparation at a time per instance, on a thread of its own (it blocks on PostgreSQL for
/// about as long as a backtest's read); a request while one runs replaces any other waiting and
/// runs next (the instance's latest request wins). Only the period's complete hours are read, and
/// not at all when the console's hourly roll-up already shows more attempts than a backtest
/// replays. What it keeps is checked again by the backtest like any kept hour.
///
/// It also keeps the most recent hours parsed on its own (``keepRecent(hours:limit:current:clock:retry:)``,
/// `ISSUERD_BACKTEST_KEEP_RECENT_HOURS`): at start and each time another hour is complete, so a
/// backtest of the last day is answered from memory even when nobody opened the page first (an
/// API script, or the page run at once). Those rounds go through the same one-at-a-time queue
/// and never replace an analyst's request waiting in it.
package final class BacktestPreparation: Sendable {
    private struct Request: Sendable {
        var current: Ruleset
        var hours: ClosedRange<Int64>
        var limit: Int
        var now: Date
        /// A round of ``keepRecent(hours:limit:current:clock:)``, not an analyst's request.
        var recent = false
    }

    private struct State {
        var running = false
        /// The hours of the request being read now.
        var reading: ClosedRange<Int64>?
        var next: Request?
        var finished = 0
        /// Backtests that waited for a read-ahead (for tests).
        var waits = 0
        /// Set by ``stop(timeout:)``: nothing starts afterwards.
        var stopped = false
        /// How many recent hours the rounds keep (0: none).
        var recentHours = 0
        /// Rounds of recent hours offered to the queue (for tests).
        var recentRounds = 0
        /// A queued round was replaced by an analyst's request: offer it again soon.
        var recentDisplaced = false
        /// Set by ``stopRecentRounds(timeout:)``: no round is offered or started afterwards.
        var recentStopped = false
    }

    private let cache: BacktestWindowCache
    private let database: PostgresPool
    private let logger: Logger
    private let state = Lock(State())
    private let recentRounds = BackgroundThread(name: "issuerd-backtest-recent")

    package init(cache: BacktestWindowCache, database: PostgresPool, logger: Logger) {
        self.cache = cache
        self.database = database
        self.logger = logger
    }

    /// Reads the complete hours of `[since, until)` for a backtest with `current`'s velocity
    /// queries: now, or after the preparation running now (replacing any other waiting).
    ///
    /// - Returns: False when there is nothing to read: the cache keeps nothing, or the period
    ///   holds no complete hour that ended at least 5 minutes ago, or spans more than 92 days.
    package func start(current: Ruleset, since: Date, until: Date, limit: Int, now: Date) -> Bool {
        switch offer(current: current, since: since, until: until, limit: limit, now: now, recent: false) {
        case .started, .queued: true
        case .nothing, .refused: false
        }
    }

    /// What became of a request.
    private enum Offer {
        case started, queued
        /// Nothing to read (or stopped).
        case nothing
        /// A round of recent hours while an analyst's request waits.
        case refused
    }

    private func offer(current: Ruleset, since: Date, until: Date, limit: Int, now: Date, recent: Bool) -> Offer {
        guard cache.capacity > 0, let hours = BacktestWindowCache.keptHours(since: since, until: until, now: now) else {
            return .nothing
        }
        // No more than the cache can keep: a larger period would evict hours for nothing.
        let request = Request(
            current: current, hours: hours, limit: min(limit, cache.capacity), now: now, recent: recent)
        let launch = state.withLock { state -> Offer in
            guard !state.stopped, !(recent && state.recentStopped) else { return .nothing }
            guard !state.running else {
                // A round of recent hours waits only when nothing else does; an analyst's
                // request takes a waiting round's place, and the round is offered again soon.
                guard !recent || state.next == nil else { return .refused }
                if !recent, state.next?.recent == true { state.recentDisplaced = true }
                state.next = request
                return .queued
            }
            state.running = true
            state.reading = request.hours
            return .started
        }
        guard launch == .started else { return launch }
        let thread = Thread { [self] in
            var request = request
            while true {
                run(request)
                let next = state.withLock { state -> Request? in
                    state.finished += 1
                    defer { state.next = nil }
                    if state.next == nil { state.running = false }
                    state.reading = state.next?.hours
                    return state.next
                }
                guard let next else { return }
                request = next
            }
        }
        thread.name = "issuerd-backtest-prepare"
        thread.start()
        return .started
    }

    /// Waits, at most `timeout`, while the period being read now is the complete hours of
    /// `[since, until)` (give or take an hour at either end, as `now` moved on): a backtest sent
    /// while the page's read-ahead of its own period is still under way then takes those hours
    /// from memory instead of reading them a second time beside it. A read-ahead of another
    /// period (a longer one the analyst has since left) is not waited for.
    package func waitWhileReading(since: Date, until: Date, now: Date, timeout: Duration) {
        guard let hours = BacktestWindowCache.keptHours(since: since, until: until, now: now) else { return }
        func same(_ reading: ClosedRange<Int64>?) -> Bool {
            guard let reading else { return false }
            return abs(reading.lowerBound - hours.lowerBound) <= 1 && abs(reading.upperBound - hours.upperBound) <= 1
        }
        guard
            state.withLock({ state in
                guard same(state.reading) else { return false }
                state.waits += 1
                return true
            })
        else { return }
        let deadline = ContinuousClock.now + timeout
        while same(state.withLock({ $0.reading })), ContinuousClock.now < deadline { usleep(5_000) }
    }

    /// How many backtests waited for a read-ahead (for tests).
    package var waitCount: Int { state.withLock { $0.waits } }

    /// Whether a preparation is running or waiting.
    package var isRunning: Bool { state.withLock { $0.running } }

    /// How many preparations have ended since start (for tests).
    package var finishedCount: Int { state.withLock { $0.finished } }

    /// Keeps the last `hours` complete hours parsed (those that ended at least
    /// ``BacktestWindowCache/lag`` ago): reads them now (after any read-ahead running), then each
    /// time another hour has become complete, reading only that hour and checking the others as
    /// any backtest does. Each instance's rounds come at its own moment within two minutes of
    /// that, so instances do not all scan at once. A round refused because an analyst's read-ahead
    /// waits, or put out of the queue by one, is offered again after `retry`. A round that finds
    /// more attempts than a backtest replays (or the cache keeps) keeps nothing and logs a warning
    /// with the count, for the operator to lower the setting; the next round tries again.
    ///
    /// - Parameters:
    ///   - current: The live ruleset, asked each round (its velocity queries are memoised).
    ///   - clock: The time.
    ///   - retry: How long before a refused or displaced round is offered again.
    /// - Returns: False when nothing is kept this way: `hours` is 0, the cache keeps nothing, or
    ///   the rounds were started or stopped already.
    @discardableResult
    package func keepRecent(
        hours: Int, limit: Int, current: @escaping @Sendable () -> Ruleset, clock: @escaping @Sendable () -> Date,
        retry: TimeInterval = 60
    ) -> Bool {
        guard hours > 0, cache.capacity > 0 else { return false }
        let first = state.withLock { state -> Bool in
            guard state.recentHours == 0, !state.stopped, !state.recentStopped else { return false }
            state.recentHours = hours
            return true
        }
        guard first else { return false }
        let jitter = Double.random(in: 0...120)
        let started = recentRounds.start { [self] in
            while !recentRounds.stopRequested {
                let now = clock()
                state.withLock { $0.recentDisplaced = false }
                let offered = offer(
                    current: current(), since: Self.recentStart(hours: hours, now: now), until: now, limit: limit,
                    now: now,
                    recent: true)
                state.withLock { $0.recentRounds += 1 }
                // Until the next hour is complete, in steps of `retry`, sooner when displaced.
                let due = offered == .refused ? retry : Self.secondsUntilNextHourIsKept(after: now) + jitter
                var slept: TimeInterval = 0
                while slept < due, !recentRounds.stopRequested, !state.withLock({ $0.recentDisplaced }) {
                    let step = min(retry, due - slept)
                    recentRounds.sleep(seconds: step)
                    slept += step
                }
            }
        }
        if !started { state.withLock { $0.recentHours = 0 } }
        return started
    }

    /// The start of the last `hours` complete hours at `now` (the newest one ended ``BacktestWindowCache/lag`` ago or more).
    package static func recentStart(hours: Int, now: Date) -> Date {
        let lastEnd = ((now.timeIntervalSince1970 - BacktestWindowCache.lag) / 3600).rounded(.down)
        return Date(timeIntervalSince1970: (lastEnd - Double(hours)) * 3600)
    }

    /// From `now` to the moment the next hour becomes keepable (one second past its ``BacktestWindowCache/lag``).
    package static func secondsUntilNextHourIsKept(after now: Date) -> TimeInterval {
        let lag = BacktestWindowCache.lag
        let next = (((now.timeIntervalSince1970 - lag) / 3600).rounded(.down) + 1) * 3600 + lag + 1
        return max(1, next - now.timeIntervalSince1970)
    }

    /// How many rounds of recent hours have been offered to the queue (for tests).
    package var recentRoundCount: Int { state.withLock { $0.recentRounds } }

    /// Whether rounds of recent hours were started (``keepRecent(hours:limit:current:clock:retry:)``).
    package var keepsRecentHours: Bool { state.withLock { $0.recentHours > 0 } }

    /// Stops the rounds of recent hours (the first thing at shutdown, so none starts a read
    /// while requests drain): a waiting round is dropped, none is offered afterwards, and their
    /// thread is waited for at most `timeout`. Never started: none start after.
    package func stopRecentRounds(timeout: Duration) {
        state.withLock { state in
            state.recentStopped = true
            if state.next?.recent == true { state.next = nil }
        }
        _ = recentRounds.stop(timeout: timeout)
    }

    /// Stops the rounds of recent hours, drops any waiting request and waits up to `timeout` for
    /// the running one to end (shutdown, before the pool closes); logs when it is still running then.
    package func stop(timeout: Duration) {
        stopRecentRounds(timeout: timeout)
        state.withLock { state in
            state.next = nil
            state.stopped = true
        }
        let deadline = ContinuousClock.now + timeout
        while isRunning, ContinuousClock.now < deadline { usleep(5_000) }
        if isRunning { logger.warning("a backtest read-ahead is still running at shutdown; it ends with the pool") }
    }

    private func run(_ request: Request) {
        let started = ContinuousClock.now
        let since = Date(timeIntervalSince1970: Double(request.hours.lowerBound) * 3600)
        let until = Date(timeIntervalSince1970: Double(request.hours.upperBound + 1) * 3600)
        // The rounds of recent hours log apart from the page's read-ahead ("backtest period …").
        let what = request.recent ? "recent backtest hours" : "backtest period"
        func tooMany(_ found: Int, elapsed: Bool) {
            var fields: [String: LogValue] = ["attempts": .int(found), "limit": .int(request.limit)]
            if elapsed { fields["elapsedMs"] = .int(Self.milliseconds(since: started)) }
            if request.recent {
                fields["hours"] = .int(request.hours.count)
                logger.warning(
                    "recent backtest hours not kept: more attempts than a backtest replays or the cache keeps; "
                        + "lower ISSUERD_BACKTEST_KEEP_RECENT_HOURS or raise ISSUERD_BACKTEST_CACHE_ATTEMPTS", fields)
                return
            }
            logger.info("\(what) not read ahead: more attempts than a backtest replays", fields)
        }
        do {
            if let rolledUp = try rolledUpAttempts(since: since, until: until), rolledUp > request.limit {
                tooMany(rolledUp, elapsed: false)
                return
            }
            switch try HistoryBacktest.prepare(
                current: request.current, since: since, until: until, limit: request.limit, database: database,
                cache: cache,
                now: request.now)
            {
            case .tooManyAttempts(let found):
                tooMany(found, elapsed: true)
            case .prepared(let kept, let read):
                logger.info(
                    request.recent ? "recent backtest hours kept" : "backtest period prepared",
                    [
                        "hours": .int(request.hours.count), "hoursRead": .int(read), "hoursAlreadyKept": .int(kept),
                        "elapsedMs": .int(Self.milliseconds(since: started)),
                    ])
            }
        } catch {
            logger.warning("\(what) not read ahead", ["error": "\(error)"])
        }
    }

    /// The attempts of `[since, until)` (whole hours) as the console's hourly roll-up counts
    /// them, when it covers the whole period (nil otherwise: the read stops at the limit anyway).
    private func rolledUpAttempts(since: Date, until: Date) throws -> Int? {
        try database.withConnection { connection in
            guard
                let row = try connection.query(
                    """
                    SELECT (SELECT rolled_from <= \(since) AND rolled_until >= \(until) FROM console_rollup_state) AS covered,
                           (SELECT coalesce(sum(attempts), 0)::int8 FROM console_hourly_decisions WHERE hour >= \(since) AND hour < \(until)) AS attempts
                    """
                ).first, try row.decode("covered", as: Bool?.self) == true
            else { return nil }
            return try row.decode("attempts", as: Int.self)
        }
    }

    private static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        Int((ContinuousClock.now - start).timeInterval * 1_000)
    }
}
