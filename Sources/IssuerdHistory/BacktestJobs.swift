import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk

/// Backtests run in the background (`POST /v1/admin/rules/backtest/jobs`), for periods too long
/// to answer in one request: the console's Backtest page starts one, polls its progress, may
/// cancel it, shows its report and offers the changed attempts as CSV. Each job runs
/// ``HistoryBacktest/run(current:candidate:since:until:limit:sampleSize:useRecordedVelocity:database:readers:cache:now:control:progress:changed:)``,
/// the code every backtest runs, on a thread of its own, holding the instance's
/// ``BacktestGate`` place until it ends (a second one meanwhile is 429 `backtest_busy`).
///
/// Jobs are seen and cancelled only by the principal that started them (another gets 404, as for
/// an id that does not exist). A finished job is kept ``keepFinished`` and at most
/// ``maximumJobs`` are kept, the oldest finished going first; the CSV keeps at most
/// ``maximumCSVRows`` changed attempts (the count of all of them is in the report).
package final class BacktestJobs: Sendable {
    /// Where a job is.
    package enum State: String, Encodable, Sendable {
        case running, done, failed, cancelled
    }

    /// A job as `GET …/jobs/{id}` shows it.
    package struct View: Encodable, Sendable {
        package struct Progress: Encodable, Sendable {
            /// Attempts replayed so far.
            package var replayed: Int
            /// Done up to this time of the window.
            package var through: Date?
            /// The share of the window's time done, 0…1.
            package var fraction: Double
        }

        package struct Failure: Encodable, Sendable {
            package var code: String
            package var message: String
        }

        package struct ChangedCSV: Encodable, Sendable {
            /// Lines kept (changed attempts, in time order).
            package var rows: Int
            /// Whether more attempts changed than were kept.
            package var truncated: Bool
            /// Where to download them.
            package var href: String
        }

        package var id: String
        package var state: State
        package var since: Date
        package var until: Date
        package var startedAt: Date
        package var finishedAt: Date?
        package var progress: Progress
        /// The report, once done.
        package var report: RulesBacktestView?
        /// Why it failed.
        package var error: Failure?
        package var changedCsv: ChangedCSV
    }

    private struct Job {
        var owner: String
        var control: HistoryBacktest.Control
        var state: State = .running
        var since: Date
        var until: Date
        var startedAt: Date
        var finishedAt: Date?
        var report: RulesBacktestView?
        var error: View.Failure?
        var csv: [String] = []
        var truncated = false
    }

    /// The most jobs kept (running and finished).
    package static let maximumJobs = 8
    /// How long a finished job is kept.
    package static let keepFinished: TimeInterval = 3_600
    /// The most changed attempts a job's CSV keeps (about 110 bytes each).
    package static let maximumCSVRows = 200_000

    private let jobs = Lock<[String: Job]>([:])
    private let running = DispatchGroup()
    private let gate: BacktestGate
    private let logger: Logger
    private let maximumCSVRows: Int

    /// Jobs taking their place in `gate` (the one the synchronous backtests take).
    package init(gate: BacktestGate, logger: Logger, maximumCSVRows: Int = BacktestJobs.maximumCSVRows) {
        self.gate = gate
        self.logger = logger
        self.maximumCSVRows = maximumCSVRows
    }

    /// Starts a job for `owner`.
    ///
    /// - Parameter before: Run on the job's thread first (the wait for a read-ahead of the period).
    /// - Throws: 429 `backtest_busy` when a backtest already runs on this instance.
    package func start(
        owner: String, current: Ruleset, candidate: Ruleset, since: Date, until: Date, limit: Int,
        database: PostgresPool, cache: BacktestWindowCache?, now: Date,
        before: @escaping @Sendable () -> Void = {}, finished: @escaping @Sendable (State) -> Void = { _ in }
    ) throws -> View {
        guard gate.enter() else {
            throw BacktestGate.busy()
        }
        let id = UUID().lowercasedString
        let control = HistoryBacktest.Control()
        let view = jobs.withLock { jobs in
            Self.prune(&jobs, now: now)
            jobs[id] = Job(owner: owner, control: control, since: since, until: until, startedAt: now)
            return Self.view(id, jobs[id]!)
        }
        running.enter()
        let thread = Thread { [self] in
            defer {
                gate.leave()
                running.leave()
            }
            before()
            let state = run(
                id: id, current: current, candidate: candidate, since: since, until: until, limit: limit,
                database: database, cache: cache, now: now, control: control)
            finished(state)
        }
        thread.name = "issuerd-backtest-job"
        thread.start()
        return view
    }

    private func run(
        id: String, current: Ruleset, candidate: Ruleset, since: Date, until: Date, limit: Int,
        database: PostgresPool, cache: BacktestWindowCache?, now: Date, control: HistoryBacktest.Control
    ) -> State {
        var state = State.failed
        var report: RulesBacktestView?
        var failure: View.Failure?
        let attempt = { [self] in
            try HistoryBacktest.run(
                current: current, candidate: candidate, since: since, until: until, limit: limit, database: database,
                cache: cache, now: now, control: control,
                changed: { [self] rows in
                    let room = jobs.withLock { max(0, maximumCSVRows - ($0[id]?.csv.count ?? 0)) }
                    let lines = rows.prefix(room).map(\.csvLine)  // made outside the lock
                    jobs.withLock { jobs in
                        jobs[id]?.csv.append(contentsOf: lines)
                        if rows.count > room { jobs[id]?.truncated = true }
                    }
                })
        }
        do {
            let outcome: HistoryBacktest.Outcome
            do {
                outcome = try attempt()
            } catch let error as PostgresError where error.isRecoveryConflict {
                // A standby (the analysts' read database) cancelled the read to replay the
                // primary's changes: run it once more from the start, with an empty CSV.
                logger.notice(
                    "backtest job cancelled by the read database (a recovery conflict); running it again",
                    ["job": "\(id)", "sqlState": .string(error.sqlState ?? "none")])
                jobs.withLock { jobs in
                    jobs[id]?.csv = []
                    jobs[id]?.truncated = false
                }
                outcome = try attempt()
            }
            switch outcome {
            case .report(let result, let export):
                state = .done
                report = RulesBacktestView(
                    result, current: current, candidate: candidate,
                    window: .init(since: export.since, until: export.until, historyFrom: export.historyStart))
            case .tooManyAttempts(let found, let limit):
                failure = .init(
                    code: "backtest_too_large",
                    message: "the window holds \(found) attempts, more than \(limit); narrow 'since'/'until'")
            }
        } catch is HistoryBacktest.Cancelled {
            state = .cancelled
        } catch let error as HistoryBacktest.ExportError {
            failure = .init(code: "backtest_failed", message: error.description)
        } catch let error as PostgresError where error.isRecoveryConflict {
            logger.warning(
                "backtest job cancelled twice by the read database (a recovery conflict)",
                ["job": "\(id)", "sqlState": .string(error.sqlState ?? "none")])
            failure = .init(
                code: "read_conflict",
                message:
                    "the read database cancelled the backtest twice to replay the primary's changes (a recovery conflict); start it again, or narrow the period"
            )
        } catch {
            logger.error("backtest job failed", ["job": "\(id)", "error": "\(error)"])
            failure = .init(
                code: "backtest_failed", message: "the backtest failed; the server log says why (job \(id))")
        }
        jobs.withLock { jobs in
            jobs[id]?.state = state
            jobs[id]?.report = report
            jobs[id]?.error = failure
            jobs[id]?.finishedAt = Date()
            if state != .done { jobs[id]?.csv = [] }
        }
        return state
    }

    /// The job `id` of `owner`, or nil.
    package func view(id: String, owner: String) -> View? {
        jobs.withLock { jobs in
            guard let job = jobs[id], job.owner == owner else { return nil }
            return Self.view(id, job)
        }
    }

    /// Cancels the job `id` of `owner` (nothing when it has finished); nil when there is none.
    package func cancel(id: String, owner: String) -> View? {
        jobs.withLock { jobs in
            guard let job = jobs[id], job.owner == owner else { return nil }
            if job.state == .running { job.control.cancel() }
            return Self.view(id, job)
        }
    }

    /// The changed attempts of the finished job `id` of `owner` as CSV; nil when there is no such
    /// job, the state when it is not done.
    package func csv(id: String, owner: String) -> Result<String, StateError>? {
        jobs.withLock { jobs in
            guard let job = jobs[id], job.owner == owner else { return nil }
            guard job.state == .done else { return .failure(StateError(state: job.state)) }
            return .success(ChangedAttemptsCSV.header + job.csv.joined())
        }
    }

    /// The job is not done.
    package struct StateError: Error, Sendable {
        package var state: State
    }

    /// Cancels every running job and waits for them, at most `timeout`.
    package func stop(timeout: TimeInterval) {
        jobs.withLock { jobs in for job in jobs.values where job.state == .running { job.control.cancel() } }
        _ = running.wait(timeout: .now() + timeout)
    }

    private static func view(_ id: String, _ job: Job) -> View {
        let progress = job.control.progress
        return View(
            id: id, state: job.state, since: job.since, until: job.until, startedAt: job.startedAt,
            finishedAt: job.finishedAt,
            progress: .init(
                replayed: progress?.replayed ?? 0, through: progress?.through,
                fraction: job.state == .done ? 1 : progress?.fraction ?? 0),
            report: job.report, error: job.error,
            changedCsv: .init(
                rows: job.csv.count, truncated: job.truncated,
                href: "/v1/admin/rules/backtest/jobs/\(id)/changed.csv"))
    }

    /// Drops finished jobs older than ``keepFinished``, then the oldest finished past ``maximumJobs - 1``.
    private static func prune(_ jobs: inout [String: Job], now: Date) {
        for (id, job) in jobs {
            if let finished = job.finishedAt, now.timeIntervalSince(finished) > keepFinished { jobs[id] = nil }
        }
        let finished = jobs.filter { $0.value.finishedAt != nil }.sorted { $0.value.finishedAt! < $1.value.finishedAt! }
        var excess = jobs.count - (maximumJobs - 1)
        for (id, _) in finished where excess > 0 {
            jobs[id] = nil
            excess -= 1
        }
    }
}
