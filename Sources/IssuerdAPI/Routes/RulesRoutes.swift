import Foundation
import IssuerdHTTP
import IssuerdHistory
import IssuerdRisk

/// Routes for the rules: `GET /v1/admin/rules` (analyst, admin), `POST /v1/admin/rules/reload`
/// (admin), `POST /v1/admin/rules/backtest` and `POST /v1/admin/rules/backtest/prepare`
/// (analyst, admin). The analyst console calls the analyst routes with its session cookie (and
/// CSRF token) instead of a key.
enum RulesRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        table.add(.get, "/v1/admin/rules") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let view = try context.database.withConnection { connection in
                try RulesetStatusView.build(context.rules.active.status, now: context.now, connection: connection)
            }
            return try .json(view)
        }

        table.add(.post, "/v1/admin/rules/reload") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.admin])
            let result = context.rules.reload(trigger: "api", actor: principal.auditActor)
            let reload: RulesetStatusView.ReloadView
            switch result {
            case .failed(let failure):
                throw rulesetInvalid(
                    RulesetFailureView(failure),
                    message: "the rule files do not compile; the previous ruleset keeps serving")
            case .replaced(let previous, let current):
                reload = .init(result: result.name, previousVersion: previous, version: current)
            case .unchanged(let version):
                reload = .init(result: result.name, previousVersion: version, version: version)
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
            let candidate: Ruleset
            do {
                let files = try body.candidateFiles(over: try context.rules.loader.files())
                candidate = try RulesetCompiler.compile(files, contentHasher: RulesetVersioning.sha256)
            } catch let error as RulesetError {
                let failure = RulesetFailureView(
                    at: context.now, message: error.description, diagnostics: error.diagnostics)
                throw rulesetInvalid(failure, message: "the candidate rules do not compile")
            }
            let outcome = try context.backtestGate.run {
                // The page's read-ahead of this period may be under way: its hours are then kept soon.
                context.backtestPreparation.waitWhileReading(
                    since: window.since, until: window.until, now: context.now, timeout: .seconds(3))
                return try HistoryBacktest.run(
                    current: current, candidate: candidate, since: window.since, until: window.until,
                    limit: window.limit,
                    database: context.database, cache: context.backtestCache, now: context.now)
            }
            switch outcome {
            case .tooManyAttempts(let found, let limit):
                throw HTTPError(
                    status: 422, code: "backtest_too_large",
                    message: "the window holds \(found) attempts, more than \(limit); narrow 'since'/'until'",
                    context: ["attempts": .int(found), "limit": .int(limit)])
            case .report(let report, let export):
                context.metrics.counter(
                    "issuerd_rules_backtests_total", help: "Rule backtests run over stored history."
                ).increment()
                let view = RulesBacktestView(
                    report, current: current, candidate: candidate,
                    window: .init(since: export.since, until: export.until, historyFrom: export.historyStart))
                return try .json(view)
            }
        }
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
