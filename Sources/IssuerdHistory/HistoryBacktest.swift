import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk

/// A backtest over PostgreSQL history, the same path for `POST /v1/admin/rules/backtest`, the
/// console's backtest jobs and `issuerd rules backtest --since … --until …`: ``BacktestStream``
/// reads the window in time order, a slice at a time, with the history its velocity needs, in one
/// REPEATABLE READ snapshot, and replays each slice as it comes (``Backtest/Accumulator``), so
/// memory is bounded by a slice and the keys active within the rules' longest window. A velocity
/// value an attempt recorded at decision time is used as recorded; only the others are counted
/// from history (docs/rules.md, "Backtest input").
public enum HistoryBacktest {
    /// What a run gives.
    public enum Outcome: Sendable {
        /// The replay; `export` gives the window and how far back history may have been read.
        case report(Backtest.Report, export: HistoryExport)
        /// The window holds more attempts than allowed; the replay stopped there.
        case tooManyAttempts(found: Int, limit: Int)
    }

    /// A stored attempt could not be read back (an `inputs` value of the wrong type).
    public struct ExportError: Error, Sendable, CustomStringConvertible {
        /// The attempt's id.
        public var attemptID: String
        /// What is wrong with it.
        public var message: String
        public var description: String { "stored attempt \(attemptID) could not be replayed: \(message)" }
    }

    /// The run was cancelled through its ``Control``.
    public struct Cancelled: Error, Sendable {}

    /// How far a run is.
    public struct Progress: Sendable, Equatable {
        /// Attempts replayed so far.
        public var replayed: Int
        /// The window is done up to this time.
        public var through: Date
        /// The share of the window's time done, 0…1.
        public var fraction: Double
        /// Velocity history held now: events, and ids holding them (the streaming state's size).
        public var historyEvents: Int
        public var historyKeys: Int
    }

    /// A changed attempt as the export lists it: with its channel column and its card's last four.
    public struct ChangedRow: Sendable {
        public var change: Backtest.ChangedAttempt
        /// The attempt's stored channel.
        public var channel: String?
        /// The card's last four digits (never more of the number).
        public var lastFour: String?

        /// The row's CSV line (``ChangedAttemptsCSV``).
        public var csvLine: String { ChangedAttemptsCSV.line(change, channel: channel, lastFour: lastFour) }
    }

    /// Watches a run from another thread and cancels it. Thread-safe (one lock).
    public final class Control: Sendable {
        private let state = Lock<(cancelled: Bool, progress: Progress?)>((false, nil))

        public init() {}

        /// Asks the run to stop; it throws ``Cancelled`` at its next slice or history page.
        public func cancel() { state.withLock { $0.cancelled = true } }

        /// Whether ``cancel()`` was called.
        public var isCancelled: Bool { state.withLock { $0.cancelled } }

        /// The last progress the run reported.
        public var progress: Progress? { state.withLock { $0.progress } }

        func report(_ progress: Progress) { state.withLock { $0.progress = progress } }
    }

    /// Replays `[since, until)` with `current` and `candidate`, reading history in one
    /// REPEATABLE READ snapshot.
    ///
    /// - Parameters:
    ///   - limit: The most attempts to replay; more is ``Outcome/tooManyAttempts(found:limit:)``.
    ///   - sampleSize: How many changed attempts to keep.
    ///   - useRecordedVelocity: Take the velocity values attempts recorded (the default);
    ///     `false` counts every value from history, as a replay of `issuerd rules export` does.
    ///   - readers: How many connections take part (the first, plus those the pool has free), all
    ///     in one snapshot: the first runs the history's queries, the others read the next slice
    ///     meanwhile; by default one per core, at most two.
    ///   - cache: Hours parsed by earlier runs (``BacktestWindowCache``, the server's); nil reads
    ///     and parses every slice.
    ///   - now: The time, for which hours are complete enough to keep.
    ///   - control: Told the progress after each slice; cancels the run.
    ///   - progress: A line of progress for long runs (`issuerd` prints it on standard error).
    ///   - changed: Given the changed attempts of each slice, in time order (nil: not collected).
    /// - Throws: ``PostgresError``, ``ExportError`` when a stored attempt does not parse, ``Cancelled``.
    public static func run(
        current: Ruleset, candidate: Ruleset, since: Date, until: Date, limit: Int, sampleSize: Int = 20,
        useRecordedVelocity: Bool = true, database: PostgresPool,
        readers: Int = min(2, ProcessInfo.processInfo.activeProcessorCount),
        cache: BacktestWindowCache? = nil, now: Date = Date(), control: Control? = nil,
        progress: (String) -> Void = { _ in }, changed: (([ChangedRow]) -> Void)? = nil
    ) throws -> Outcome {
        let export = HistoryExport(
            since: since, until: until, lookbackSeconds: HistoryExport.lookback(for: [current, candidate]),
            windowKeysOnly: true)
        let queries = velocityQueries(of: [current, candidate])
        var accumulator = Backtest.Accumulator(
            current: current, candidate: candidate, sampleSize: sampleSize, collectChanges: changed != nil)
        do {
            try inOneSnapshot(database: database, readers: readers) { connections in
                progress(
                    "backtest: reading on \(connections.count) connection\(connections.count == 1 ? "" : "s") in one snapshot"
                )
                let labels = try outcomeLabels(since: since, until: until, connection: connections[0])
                if !labels.isEmpty {
                    progress("backtest: \(labels.count) attempts with an outcome")
                    accumulator = Backtest.Accumulator(
                        current: current, candidate: candidate, sampleSize: sampleSize, collectChanges: changed != nil,
                        measuresOutcomes: true)
                }
                var lastLine = Date.distantPast
                try BacktestStream.run(
                    since: since, until: until, queries: queries, useRecorded: useRecordedVelocity, limit: limit,
                    accumulator: &accumulator, labels: labels, connections: connections, cache: cache, now: now,
                    changed: changed,
                    cancelled: { control?.isCancelled ?? false },
                    progress: { step in
                        control?.report(step)
                        if Date().timeIntervalSince(lastLine) >= 1 || step.fraction >= 1 {
                            lastLine = Date()
                            progress(
                                "backtest: \(step.replayed) attempts replayed, through \(ChangedAttemptsCSV.timestamp(step.through))"
                                    + " (\(Int(step.fraction * 100)) %), velocity history \(step.historyEvents) events"
                                    + " of \(step.historyKeys) keys")
                        }
                    },
                    log: progress)
            }
        } catch is BacktestHistory.TooMany {
            let found = try database.withConnection { try export.attemptCount(connection: $0) }
            return .tooManyAttempts(found: found, limit: limit)
        }
        return .report(accumulator.report, export: export)
    }

    /// What ``prepare(current:since:until:limit:database:readers:cache:now:)`` did.
    public enum Preparation: Sendable, Equatable {
        /// The period's complete hours: found kept and unchanged, and read (and kept).
        case prepared(hoursKept: Int, hoursRead: Int)
        /// The attempts found, more than `limit`: nothing kept.
        case tooManyAttempts(found: Int)
    }

    /// Reads and parses the attempts of `[since, until)` into `cache` ahead of a backtest of that
    /// period with `current` and a candidate using the same velocity queries (an analyst opening
    /// the Backtest page): the backtest then takes the period's complete hours from memory.
    ///
    /// - Returns: The hours found kept and read, or the attempts found when more than `limit`.
    /// - Throws: ``PostgresError``, or ``ExportError`` when a stored attempt does not parse.
    public static func prepare(
        current: Ruleset, since: Date, until: Date, limit: Int, database: PostgresPool,
        readers: Int = min(2, ProcessInfo.processInfo.activeProcessorCount), cache: BacktestWindowCache,
        now: Date = Date()
    ) throws -> Preparation {
        let queries = velocityQueries(of: [current])
        do {
            let hours = try inOneSnapshot(database: database, readers: readers) { connections in
                try BacktestHistory.prepare(
                    since: since, until: until, queries: queries, limit: limit, connections: connections,
                    cache: cache, now: now)
            }
            return .prepared(hoursKept: hours.kept, hoursRead: hours.read)
        } catch let error as BacktestHistory.TooMany {
            return .tooManyAttempts(found: error.found)
        }
    }

    /// An attempt's current outcome as a backtest counts it, with the attempt's id and time (by
    /// which the slice holding it finds it).
    package struct OutcomeLabel: Sendable, Equatable {
        package var attemptID: String
        package var time: Date
        package var label: Backtest.Label
    }

    /// The current outcomes of the attempts of `[since, until)` that have one, as rule performance
    /// counts them (``RulePerformance``): confirmed fraud with its amount, or legitimate; in the
    /// order a window's attempts are replayed (time, then id). The attempt's time is the copy its
    /// outcome keeps (`attempt_created_at`, always the attempt's `created_at`), so the attempts
    /// table is not read for them.
    package static func outcomeLabels(
        since: Date, until: Date, connection: PostgresConnection
    ) throws -> [OutcomeLabel] {
        var labels: [OutcomeLabel] = []
        for row in try connection.query(
            """
            SELECT o.attempt_id, o.attempt_created_at, o.outcome = 'fraud', coalesce(o.amount_lost, 0)
            FROM attempt_outcomes o
            WHERE o.is_current AND (o.outcome = 'legitimate' OR o.confirmed)
              AND o.attempt_created_at >= \(since) AND o.attempt_created_at < \(until)
            """)
        {
            // The id decoded as a window's attempt ids are (`BacktestHistory.Page`), so the two compare equal.
            let fraud: Bool = try row.decode(2)
            labels.append(
                OutcomeLabel(
                    attemptID: try row.decode(0), time: try row.decode(1),
                    label: Backtest.Label(fraud: fraud, amountLost: fraud ? try row.decode(3) : 0)))
        }
        labels.sort { $0.time != $1.time ? $0.time < $1.time : $0.attemptID < $1.attemptID }
        return labels
    }

    /// Every velocity query of `rulesets`, each once, in their order.
    package static func velocityQueries(of rulesets: [Ruleset]) -> [VelocityQuery] {
        var queries: [VelocityQuery] = []
        for query in rulesets.flatMap(\.velocityQueries) where !queries.contains(query) { queries.append(query) }
        return queries
    }

    /// Runs `read` in one REPEATABLE READ snapshot: on a connection of the pool and, when the pool
    /// has them free at once, up to `readers - 1` more in the same snapshot. A stored attempt that
    /// does not parse is rethrown as ``ExportError``.
    private static func inOneSnapshot<T>(
        database: PostgresPool, readers: Int, _ read: ([PostgresConnection]) throws -> T
    ) throws -> T {
        do {
            return try database.transaction(isolation: .repeatableRead) { connection in
                try database.withSharedSnapshot(of: connection, extra: readers - 1, read)
            }
        } catch let error as BacktestHistory.BadAttempt {
            throw ExportError(attemptID: error.id, message: error.message)
        }
    }
}
