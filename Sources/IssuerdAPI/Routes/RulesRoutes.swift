import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdHistory
import IssuerdRisk

/// Routes for the rules: `GET /v1/admin/rules` (analyst, admin), `POST /v1/admin/rules/reload`
/// (admin), `POST /v1/admin/rules/backtest` and `POST /v1/admin/rules/backtest/prepare`
/// (analyst, admin), and the background jobs `…/backtest/jobs` (start, progress, cancel, changed
/// attempts as CSV; analyst, admin). The analyst console calls the analyst routes with its session
/// cookie (and CSRF token) instead of a key.
enum RulesRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        table.add(.get, "/v1/admin/rules") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            // The console's landing page: its hit counts read on the read database.
            let view = try context.analystRead {
                try context.reads.withConnection { connection in
                    try RulesetStatusView.build(
                        context.rules.active.status, now: context.now, connection: connection,
                        rollUp: context.rollUpOnPrimary)
                }
            }
            return try .json(view)
        }

        table.add(.post, "/v1/admin/rules/reload") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.admin])
            let outcome = context.rules.reload(trigger: "api", actor: principal.auditActor, person: principal.name)
            let reload: RulesetStatusView.ReloadView
            switch outcome.result {
            case .failed(let failure):
                throw rulesetInvalid(
                    RulesetFailureView(failure),
                    message: "the rule files do not compile or their examples fail; the previous ruleset keeps serving")
            case .replaced(let previous, let current):
                reload = .init(result: outcome.result.name, previousVersion: previous, version: current)
            case .unchanged(let version):
                reload = .init(result: outcome.result.name, previousVersion: version, version: version)
            case .proposed(let serving, let proposed):
                reload = .init(
                    result: outcome.result.name, previousVersion: serving, version: proposed,
                    changeId: outcome.change?.changeId.lowercasedString)
            }
            var view = try context.database.withConnection { connection in
                try RulesetStatusView.build(context.rules.active.status, now: context.now, connection: connection)
            }
            view.reload = reload
            return try .json(view)
        }

        // 202 whatever happens next: the preparation only saves the backtest time, and the
        // backtest checks what it kept (BacktestPreparation).
        table.add(.post, "/v1/admin/rules/backtest/prepare") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let body = try request.decodeJSON(RulesBacktestPrepareRequest.self)
            let window = try RulesBacktestRequest.window(since: body.since, until: body.until, limit: nil)
            let started = context.backtestPreparation.start(
                current: context.rules.current, since: window.since, until: window.until, limit: window.limit,
                now: context.now)
            return try .json(["started": started], status: 202)
        }

        table.add(.post, "/v1/admin/rules/backtest") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let body = try request.decodeJSON(RulesBacktestRequest.self)
            let window = try body.window()
            let current = context.rules.current
            let candidate = try compileCandidate(body, context: context)
            let outcome = try context.backtestGate.run {
                // The page's read-ahead of this period may be under way: its hours are then kept soon.
                context.backtestPreparation.waitWhileReading(
                    since: window.since, until: window.until, now: context.now, timeout: .seconds(3))
                return try context.analystRead {
                    try HistoryBacktest.run(
                        current: current, candidate: candidate, since: window.since, until: window.until,
                        limit: window.limit,
                        database: context.reads, cache: context.backtestCache, now: context.now)
                }
            }
            switch outcome {
            case .tooManyAttempts(let found, let limit):
                throw HTTPError(
                    status: 422, code: "backtest_too_large",
                    message: "the window holds \(found) attempts, more than \(limit); narrow 'since'/'until'",
                    context: ["attempts": .int(found), "limit": .int(limit)])
            case .report(let report, let export):
                backtestsRun(context).increment()
                let view = RulesBacktestView(
                    report, current: current, candidate: candidate,
                    window: .init(since: export.since, until: export.until, historyFrom: export.historyStart))
                return try .json(view)
            }
        }

        table.add(.post, "/v1/admin/rules/backtest/jobs") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let body = try request.decodeJSON(RulesBacktestRequest.self)
            let window = try body.window(maximum: RulesBacktestRequest.maximumJobAttempts)
            let candidate = try compileCandidate(body, context: context)
            let now = context.now
            let view = try context.backtestJobs.start(
                owner: principal.auditActor, current: context.rules.current, candidate: candidate,
                since: window.since, until: window.until, limit: window.limit, database: context.reads,
                cache: context.backtestCache, now: now,
                before: {
                    context.backtestPreparation.waitWhileReading(
                        since: window.since, until: window.until, now: now, timeout: .seconds(3))
                },
                finished: { state in if state == .done { backtestsRun(context).increment() } })
            var response = try HTTPResponse.json(view, status: 202)
            response.headers.set("Location", "/v1/admin/rules/backtest/jobs/\(view.id)")
            return response
        }

        table.add(.get, "/v1/admin/rules/backtest/jobs/{jobId}") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            guard let view = context.backtestJobs.view(id: jobID(request), owner: principal.auditActor) else {
                throw jobNotFound()
            }
            return try .json(view)
        }

        table.add(.delete, "/v1/admin/rules/backtest/jobs/{jobId}") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            guard let view = context.backtestJobs.cancel(id: jobID(request), owner: principal.auditActor) else {
                throw jobNotFound()
            }
            return try .json(view, status: 202)
        }

        table.add(.get, "/v1/admin/rules/backtest/jobs/{jobId}/changed.csv") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            switch context.backtestJobs.csv(id: jobID(request), owner: principal.auditActor) {
            case nil:
                throw jobNotFound()
            case .failure(let error)?:
                throw HTTPError(
                    status: 409, code: "backtest_not_done",
                    message: "the backtest is \(error.state.rawValue); its changed attempts are there once it is done")
            case .success(let text)?:
                var response = HTTPResponse.text(text, contentType: "text/csv; charset=utf-8")
                response.headers.set("Content-Disposition", "attachment; filename=\"backtest-changed.csv\"")
                response.headers.set("Cache-Control", "no-store")
                return response
            }
        }
    }

    /// The candidate of a backtest request, compiled over the rules directory's files; 422
    /// `ruleset_invalid` when it does not compile.
    private static func compileCandidate(_ body: RulesBacktestRequest, context: ServiceContext) throws -> Ruleset {
        do {
            let files = try body.candidateFiles(over: try context.rules.loader.files())
            return try RulesetCompiler.compile(files, contentHasher: RulesetVersioning.sha256)
        } catch let error as RulesetError {
            let failure = RulesetFailureView(
                at: context.now, message: error.description, diagnostics: error.diagnostics)
            throw rulesetInvalid(failure, message: "the candidate rules do not compile")
        }
    }

    private static func backtestsRun(_ context: ServiceContext) -> Counter {
        context.metrics.counter("issuerd_rules_backtests_total", help: "Rule backtests run over stored history.")
    }

    /// The job id of the path: at most 64 characters (a job's id is a UUID).
    private static func jobID(_ request: HTTPRequest) -> String {
        let id = request.pathParameters["jobId"] ?? ""
        return id.utf8.count <= 64 ? id : ""
    }

    private static func jobNotFound() -> HTTPError {
        HTTPError(status: 404, code: "backtest_job_not_found", message: "no backtest job of yours has that id")
    }

    /// 422 `ruleset_invalid`: `detail` is the first positioned error, `diagnostics` all of them.
    static func rulesetInvalid(
        _ failure: RulesetFailureView, message: String, file: String = #fileID, line: Int = #line
    ) -> HTTPError {
        let diagnostics: [JSONValue] = failure.diagnostics.map { diagnostic in
            var members: [String: JSONValue] = [
                "file": .string(diagnostic.file), "line": .int(diagnostic.line), "column": .int(diagnostic.column),
                "message": .string(diagnostic.message), "text": .string(diagnostic.text),
            ]
            if let expected = diagnostic.expected { members["expected"] = .string(expected) }
            if let suggestion = diagnostic.suggestion { members["suggestion"] = .string(suggestion) }
            return .object(members)
        }
        return HTTPError(
            status: 422, code: "ruleset_invalid", message: message,
            context: ["detail": .string(failure.error), "diagnostics": .array(diagnostics)], file: file, line: line)
    }

}
