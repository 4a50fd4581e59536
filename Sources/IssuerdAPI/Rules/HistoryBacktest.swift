import Foundation
import IssuerdPostgres
import IssuerdRisk

/// A backtest over PostgreSQL history: ``HistoryExport`` then ``Backtest/run(current:candidate:log:sampleSize:progressEvery:progress:)``,
/// the same path for `POST /v1/admin/rules/backtest` and `issuerd rules backtest --since … --until …`.
public enum HistoryBacktest {
    /// What a run gives.
    public enum Outcome: Sendable {
        /// The replay.
        case report(Backtest.Report, export: HistoryExport)
        /// The window holds more attempts than allowed; nothing was replayed.
        case tooManyAttempts(found: Int, limit: Int)
    }

    /// A stored attempt could not be read back (an `inputs` value of the wrong type).
    public struct ExportError: Error, Sendable, CustomStringConvertible {
        /// What the history parser said.
        public var underlying: AttemptLogError
        public var description: String { "stored history could not be replayed: \(underlying)" }
    }

    /// Replays `[since, until)` with `current` and `candidate`, reading history in one
    /// REPEATABLE READ snapshot.
    ///
    /// - Parameters:
    ///   - limit: The most attempts to replay; more is ``Outcome/tooManyAttempts(found:limit:)``.
    ///   - sampleSize: How many changed attempts to keep.
    ///   - progress: A line of progress for long runs (`issuerd` prints it on standard error).
    /// - Throws: ``PostgresError``, or ``ExportError`` when a stored attempt does not parse.
    public static func run(current: Ruleset, candidate: Ruleset, since: Date, until: Date, limit: Int, sampleSize: Int = 20,
                           database: PostgresPool, progress: (String) -> Void = { _ in }) throws -> Outcome {
        let export = HistoryExport(since: since, until: until, lookbackSeconds: HistoryExport.lookback(for: [current, candidate]),
                                   windowKeysOnly: true)
        let text: String
        do {
            text = try database.transaction(isolation: .repeatableRead) { connection -> String in
                let found = try export.attemptCount(connection: connection)
                guard found <= limit else { throw TooMany(found: found) }
                progress("backtest: \(found) attempts to replay, history from \(HistoryExport.timestamp(export.historyStart))")
                var text = ""
                var reported = 0
                try export.write(connection: connection, progress: { lines in
                    guard lines - reported >= 50_000 else { return }
                    reported = lines
                    progress("backtest: \(lines) history lines read")
                }) { line in
                    text += line
                    text += "\n"
                }
                return text
            }
        } catch let error as TooMany {
            return .tooManyAttempts(found: error.found, limit: limit)
        }
        let log: AttemptLog
        do {
            log = try AttemptLog(jsonLines: text)
        } catch {
            throw ExportError(underlying: error)
        }
        let report = Backtest.run(current: current, candidate: candidate, log: log, sampleSize: sampleSize) { done, total in
            progress("backtest: \(done)/\(total) attempts replayed")
        }
        return .report(report, export: export)
    }

    private struct TooMany: Error {
        var found: Int
    }
}
