import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdHistory
import IssuerdRisk

/// Rule changes under maker-checker (analyst or admin key, or the console's session):
/// `GET /v1/admin/rules/changes`, `GET /v1/admin/rules/changes/{changeId}` (with a backtest of a
/// proposed change over the last 7 days), `POST …/{changeId}/approve` and `…/reject`.
enum RuleChangeRoutes {
    /// The backtest window shown with a proposed change.
    static let backtestWindow: TimeInterval = 7 * 86_400

    /// The body of an approval or a rejection.
    struct DecisionRequest: Decodable {
        var note: String?
    }

    /// `GET …/changes`: whether approval is required here, and the changes, newest first.
    struct ChangeList: Encodable {
        var approvalRequired: Bool
        var changes: [RuleChangeStore.Change]
    }

    /// `GET …/changes/{changeId}`: the change and, while proposed, its backtest.
    struct ChangeDetail: Encodable {
        var change: RuleChangeStore.Change
        var backtest: ChangeBacktest?

        func encode(to encoder: any Encoder) throws {
            try change.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(backtest, forKey: .backtest)
        }

        private enum Keys: String, CodingKey { case backtest }
    }

    static func register(in table: inout RouteTable, context: ServiceContext) {
        table.add(.get, "/v1/admin/rules/changes") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            try QueryParameters.allow(["status", "limit"], in: request.query)
            let status = try AnalystRoutes.choice(
                request.query["status"], field: "status",
                from: ["proposed", "approved", "rejected", "superseded", "failed"])
            let limit = try QueryParameters.limit(request.query["limit"], default: 50, maximum: 200)
            let changes = try context.database.withConnection { connection in
                try RuleChangeStore.list(status: status, limit: limit, connection: connection)
            }
            return try .json(ChangeList(approvalRequired: context.rules.approvalRequired, changes: changes))
        }

        table.add(.get, "/v1/admin/rules/changes/{changeId}") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let changeID = try changeID(request)
            guard
                let change = try context.database.withConnection({
                    try RuleChangeStore.read(changeID, connection: $0)
                })
            else { throw changeNotFound() }
            let backtest = change.status == "proposed" ? try backtest(of: change, context: context) : nil
            return try .json(ChangeDetail(change: change, backtest: backtest))
        }

        for (verb, approve) in [("approve", true), ("reject", false)] {
            table.add(.post, "/v1/admin/rules/changes/{changeId}/\(verb)") { request in
                let principal = try context.apiKeys.authenticate(
                    request, roles: [.analyst, .admin], consoleSession: true)
                let changeID = try changeID(request)
                let note = try request.body.isEmpty ? nil : request.decodeJSON(DecisionRequest.self).note
                if let note {
                    guard note.count <= 2000 else {
                        throw APIErrors.invalidRequest("'note' must be at most 2000 characters", field: "note")
                    }
                    guard !AnalystRoutes.containsCardNumber(note) else {
                        throw APIErrors.invalidRequest("'note' must not hold a card number", field: "note")
                    }
                }
                guard context.rules.approvalRequired else {
                    throw HTTPError(
                        status: 409, code: "approval_not_required",
                        message: "rule changes serve on reload here: ISSUERD_RULES_APPROVAL is off")
                }
                let change: RuleChangeStore.Change
                do {
                    change = try context.database.withConnection { connection in
                        try RuleChangeStore.decide(
                            changeID, approve: approve, by: principal.name, actor: principal.auditActor, note: note,
                            at: context.now, connection: connection)
                    }
                } catch RuleChangeStore.DecisionError.notFound {
                    throw changeNotFound()
                } catch RuleChangeStore.DecisionError.notProposed(let status) {
                    throw HTTPError(
                        status: 409, code: "change_not_proposed",
                        message: "the change is \(status); only a proposed change can be approved or rejected",
                        context: ["status": .string(status)])
                } catch RuleChangeStore.DecisionError.selfApproval {
                    throw HTTPError(
                        status: 403, code: "self_approval",
                        message: "a change is approved by someone other than the person who proposed it")
                }
                if approve { context.rules.follow() }
                return try .json(change)
            }
        }
    }

    /// The proposed files against the serving ruleset over the last 7 days of stored attempts
    /// (at most ``RulesBacktestRequest/maximumAttempts``); nil when another backtest is running.
    private static func backtest(of change: RuleChangeStore.Change, context: ServiceContext) throws -> ChangeBacktest? {
        let files = try context.database.withConnection {
            try RuleChangeStore.files(of: change.changeId, connection: $0)
        }
        guard let candidate = try? RulesetCompiler.compile(files, contentHasher: RulesetVersioning.sha256) else {
            return nil
        }
        let current = context.rules.current
        let now = context.now
        let since = now.addingTimeInterval(-backtestWindow)
        let outcome: HistoryBacktest.Outcome
        do {
            outcome = try context.backtestGate.run {
                try context.analystRead {
                    try HistoryBacktest.run(
                        current: current, candidate: candidate, since: since, until: now,
                        limit: RulesBacktestRequest.maximumAttempts, database: context.reads,
                        cache: context.backtestCache, now: now)
                }
            }
        } catch is Refusal {
            return nil
        }
        switch outcome {
        case .tooManyAttempts(let found, let limit):
            return ChangeBacktest(
                skipped: "the last 7 days hold \(found) attempts, more than \(limit); run a backtest job")
        case .report(let report, let export):
            let view = RulesBacktestView(
                report, current: current, candidate: candidate,
                window: .init(since: export.since, until: export.until, historyFrom: export.historyStart))
            return ChangeBacktest(view)
        }
    }

    private static func changeID(_ request: HTTPRequest) throws -> UUID {
        guard let text = request.pathParameters["changeId"], let id = UUID(uuidString: text) else {
            throw changeNotFound()
        }
        return id
    }

    private static func changeNotFound() -> HTTPError {
        HTTPError(status: 404, code: "change_not_found", message: "no rule change has that id")
    }
}

/// The backtest summary shown with a proposed change: flows before and after, how many
/// attempts change, and the outcome figures where outcomes exist.
struct ChangeBacktest: Encodable {
    var since: Date?
    var until: Date?
    var attemptsEvaluated = 0
    var changed = 0
    var serving: RulesBacktestView.Flows?
    var candidate: RulesBacktestView.Flows?
    var transitions: [String: [String: Int]] = [:]
    var performance: RulesBacktestView.PerformanceView?
    /// Why no figures are given.
    var skipped: String?

    init(skipped: String) { self.skipped = skipped }

    init(_ view: RulesBacktestView) {
        since = view.window.since
        until = view.window.until
        attemptsEvaluated = view.attemptsEvaluated
        changed = view.changed
        serving = view.current.flows
        candidate = view.candidate.flows
        transitions = view.transitions
        performance = view.performance
    }
}
