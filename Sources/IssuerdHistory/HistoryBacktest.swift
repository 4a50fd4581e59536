import Foundation
import IssuerdPostgres
import IssuerdRisk

/// A backtest over PostgreSQL history, the same path for `POST /v1/admin/rules/backtest` and
/// `issuerd rules backtest --since … --until …`: ``BacktestHistory`` reads the window's attempts
/// and the history their velocity needs in one REPEATABLE READ snapshot, then
/// ``Backtest/run(current:candidate:attempts:recorded:history:sampleSize:progressEvery:workers:progress:)``
/// replays them. A velocity value an attempt recorded at decision time is used as recorded;
/// only the others are counted from history (docs/rules.md, "Backtest input").
public enum HistoryBacktest {
    /// What a run gives.
    public enum Outcome: Sendable {
        /// The replay; `export` gives the window and how far back history may have been read.
        case report(Backtest.Report, export: HistoryExport)
        /// The window holds more attempts than allowed; nothing was replayed.
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

    /// When the history of attempts is read by time alone, the rows of ids not asked for dropped
    /// in issuerd, rather than through the key's index with the ids sent: when the ids times
    /// this reach the rows the range is expected to hold (the window's rate times the range).
    /// On a day's window of 33,000 attempts, 33,000 card ids over 66,000 rows read faster by
    /// time (sending and planning the list alone took 20 ms); 1,400 ids over the same rows read
    /// faster through the index.
    public static let idsPerRowByTime = 4.0

    /// Replays `[since, until)` with `current` and `candidate`, reading history in one
    /// REPEATABLE READ snapshot.
    ///
    /// - Parameters:
    ///   - limit: The most attempts to replay; more is ``Outcome/tooManyAttempts(found:limit:)``.
    ///   - sampleSize: How many changed attempts to keep.
    ///   - useRecordedVelocity: Take the velocity values attempts recorded (the default);
    ///     `false` counts every value from history, as a replay of `issuerd rules export` does.
    ///   - readers: How many connections read at once (the first, plus those the pool has free),
    ///     all in one snapshot; by default one per core, at most two.
    ///   - idsPerRowByTime: From how many ids per expected row an attempt history range is read
    ///     by time alone rather than through its key's index (the tests take each way).
    ///   - cache: Hours parsed by earlier runs (``BacktestWindowCache``, the server's); nil reads
    ///     and parses the whole window.
    ///   - now: The time, for which hours are complete enough to keep.
    ///   - progress: A line of progress for long runs (`issuerd` prints it on standard error);
    ///     it may be called from the readers' threads, one call at a time.
    /// - Throws: ``PostgresError``, or ``ExportError`` when a stored attempt does not parse.
    public static func run(
        current: Ruleset, candidate: Ruleset, since: Date, until: Date, limit: Int, sampleSize: Int = 20,
        useRecordedVelocity: Bool = true, database: PostgresPool,
        readers: Int = min(2, ProcessInfo.processInfo.activeProcessorCount),
        idsPerRowByTime: Double = Self.idsPerRowByTime, cache: BacktestWindowCache? = nil, now: Date = Date(),
        progress: (String) -> Void = { _ in }
    ) throws -> Outcome {
        let export = HistoryExport(
            since: since, until: until, lookbackSeconds: HistoryExport.lookback(for: [current, candidate]),
            windowKeysOnly: true)
        let queries = velocityQueries(of: [current, candidate])
        let input: BacktestHistory
        do {
            input = try inOneSnapshot(database: database, readers: readers) { connections in
                try BacktestHistory.read(
                    since: since, until: until, queries: queries, useRecorded: useRecordedVelocity, limit: limit,
                    connections: connections, idsPerRowByTime: idsPerRowByTime, cache: cache, now: now,
                    progress: progress)
            }
        } catch let error as BacktestHistory.TooMany {
            return .tooManyAttempts(found: error.found, limit: limit)
        }
        let report = Backtest.run(
            current: current, candidate: candidate, attempts: input.attempts, recorded: input.recorded,
            history: input.history, sampleSize: sampleSize
        ) { done, total in
            progress("backtest: \(done)/\(total) attempts replayed")
        }
        return .report(report, export: export)
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
