import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres
import IssuerdStorage

/// The review queue (analyst or admin; the console's session with CSRF on changes):
/// `GET /v1/admin/cases`, `GET /v1/admin/cases/{caseId}`, `POST …/assign`, `POST …/close`,
/// `POST …/suspend-tokens`.
enum CaseRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        table.add(.get, "/v1/admin/cases") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let queue = try queue(request.query["queue"], actor: principal.auditActor)
            let status =
                try AnalystRoutes.choice(request.query["status"], field: "status", from: ["open", "closed"]) ?? "open"
            let limit = try limit(request.query["limit"])
            let now = context.now
            let body = try context.database.withConnection { connection -> JSONValue in
                try ReviewQueue.catchUp(
                    owners: owners(context), stepUpWait: context.configuration.outcomes.reviewStepUpWait.timeInterval,
                    now: now, connection: connection)
                let cases = try ReviewQueue.list(queue, status: status, limit: limit, connection: connection)
                let counts = try ReviewQueue.openCounts(actor: principal.auditActor, connection: connection)
                var queues: [JSONValue] = counts.owners.map { ["queue": .string("owner:\($0.0)"), "open": .int($0.1)] }
                queues.append(["queue": "mine", "open": .int(counts.mine)])
                return [
                    "cases": .array(cases.map { json($0, now: now) }), "queues": .array(queues),
                ]
            }
            return try .json(body)
        }

        table.add(.get, "/v1/admin/cases/{caseId}") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let caseID = try caseID(request)
            let now = context.now
            let body = try context.database.withConnection { connection -> JSONValue? in
                guard let found = try ReviewQueue.find(caseID, connection: connection),
                    let attempt = try AttemptRoutes.detail(found.attemptID, context: context, connection: connection)
                else { return nil }
                let tokens =
                    try found.cardID.map { try TokenStore.adminViews(cardID: $0, connection: connection) } ?? []
                // A reissued card's tokens live under its successor: the reissue says where they went.
                let reissues =
                    try found.cardID.map { cardID in
                        try ReissueStore.recent(cardID: cardID, limit: 5, connection: connection).map {
                            CardReissue.view($0, tokens: try ReissueStore.tokens($0.reissueID, connection: connection))
                        }
                    } ?? []
                return [
                    "case": json(found, now: now), "attempt": .object(attempt),
                    "cardAttempts": .array(
                        try related(column: "card_id", found.cardID, except: found.attemptID, connection: connection)),
                    "customerAttempts": .array(
                        try related(
                            column: "customer_id", found.customerID, except: found.attemptID, connection: connection)),
                    "tokens": try JSONCoding.decoder.decode(JSONValue.self, from: JSONCoding.encoder.encode(tokens)),
                    "reissues": try JSONCoding.decoder.decode(
                        JSONValue.self, from: JSONCoding.encoder.encode(reissues)),
                ]
            }
            guard let body else { throw ReviewQueue.notFound(caseID) }
            return try .json(body)
        }

        table.add(.post, "/v1/admin/cases/{caseId}/assign") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let caseID = try caseID(request)
            let now = context.now
            let taken = try context.database.transaction { connection in
                try ReviewQueue.assign(caseID, to: principal.auditActor, now: now, connection: connection)
            }
            return try .json(json(taken, now: now))
        }

        table.add(.post, "/v1/admin/cases/{caseId}/close") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let caseID = try caseID(request)
            guard case .object(let body) = try request.decodeJSON(JSONValue.self) else {
                throw APIErrors.invalidRequest("the body must be {\"outcome\", \"note\"}")
            }
            guard case .string(let text)? = body["outcome"], let outcome = OutcomeReport.Label(rawValue: text) else {
                throw APIErrors.invalidRequest("'outcome' must be fraud or legitimate", field: "outcome")
            }
            var note = ""
            switch body["note"] {
            case nil, .null?: break
            case .string(let text)?: note = text
            default: throw APIErrors.invalidRequest("'note' must be a string", field: "note")
            }
            let now = context.now
            let closed = try context.database.transaction { connection -> ReviewQueue.Case in
                guard let found = try ReviewQueue.find(caseID, connection: connection) else {
                    throw ReviewQueue.notFound(caseID)
                }
                let fields = OutcomeReport.Fields(
                    attemptID: found.attemptID.lowercasedString, outcome: outcome.rawValue,
                    source: "analyst",
                    note: note)
                let report: OutcomeReport
                switch OutcomeReport.validate(fields, now: now) {
                case .success(let valid): report = valid
                case .failure(let error): throw APIErrors.invalidRequest(error.message, field: error.field)
                }
                let closed = try ReviewQueue.close(
                    caseID, by: principal.auditActor, outcome: outcome, note: note, now: now, connection: connection
                )
                _ = try OutcomeStore.record([report], actor: principal.auditActor, now: now, connection: connection)
                return closed
            }
            request.logger.info(
                "review case closed", ["caseId": .int(Int(caseID)), "outcome": .string(outcome.rawValue)])
            return try .json(json(closed, now: now))
        }

        table.add(.post, "/v1/admin/cases/{caseId}/suspend-tokens") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let caseID = try caseID(request)
            let now = context.now
            let result = try context.database.transaction { connection -> (String, CardStatusChange.Outcome?) in
                guard let found = try ReviewQueue.find(caseID, connection: connection) else {
                    throw ReviewQueue.notFound(caseID)
                }
                guard found.status == "open" else {
                    throw ReviewQueue.closed(caseID)
                }
                guard let cardID = found.cardID else {
                    throw APIErrors.invalidState("the case's attempt has no card")
                }
                // The card-status path: its tokens suspended at the TSP or MDES through the
                // outbox, the card's status history and the audit log, as an admin's `stolen`.
                let outcome = try CardStatusChange.apply(
                    cardID: cardID, to: .stolen, reason: "review case \(caseID): suspected fraud",
                    actor: principal.auditActor, now: now, connection: connection)
                return (cardID, outcome)
            }
            guard let outcome = result.1 else { throw APIErrors.cardNotFound() }
            request.logger.info(
                "card's tokens suspended from a review case",
                [
                    "caseId": .int(Int(caseID)), "cardId": .string(result.0),
                    "tokensAffected": .int(outcome.tokensAffected),
                ])
            return try .json(
                JSONValue.object([
                    "cardId": .string(result.0), "status": .string(outcome.card.status.rawValue),
                    "tokensAffected": .int(outcome.tokensAffected),
                ]))
        }
    }

    /// The queue parameter: `all` (default), `mine`, or `owner:<name>`.
    static func queue(_ text: String?, actor: String) throws -> ReviewQueue.Queue {
        switch text {
        case nil, "", "all": return .all
        case "mine": return .mine(actor)
        case let text? where text.hasPrefix("owner:") && text.utf8.count <= 70 && text.utf8.count > 6:
            return .owner(String(text.dropFirst(6)))
        default: throw APIErrors.invalidRequest("'queue' must be all, mine or owner:<name>", field: "queue")
        }
    }

    private static func limit(_ text: String?) throws -> Int {
        guard let text, !text.isEmpty else { return 100 }
        guard let limit = Int(text), (1...500).contains(limit) else {
            throw APIErrors.invalidRequest("'limit' must be between 1 and 500", field: "limit")
        }
        return limit
    }

    private static func caseID(_ request: HTTPRequest) throws -> Int64 {
        guard let text = request.pathParameters["caseId"], text.utf8.count <= 18, let id = Int64(text), id > 0 else {
            throw Refusal(.notFound, code: "case_not_found", message: "no such case")
        }
        return id
    }

    /// Each rule id's owner in the serving ruleset.
    private static func owners(_ context: ServiceContext) -> [String: String] {
        Dictionary(context.rules.current.rules.map { ($0.id, $0.owner) }, uniquingKeysWith: { first, _ in first })
    }

    /// A case as the queue shows it, with its age.
    static func json(_ found: ReviewQueue.Case, now: Date) -> JSONValue {
        let age = max(0, Int(now.timeIntervalSince(found.openedAt)))
        func time(_ date: Date?) -> JSONValue { date.map { .string(RFC3339.string($0)) } ?? .null }
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return [
            "caseId": .string(String(found.caseID)), "attemptId": .string(found.attemptID.lowercasedString),
            "reason": .string(found.reason), "owners": .array(found.owners.map(JSONValue.string)),
            "status": .string(found.status), "openedAt": time(found.openedAt), "ageSeconds": .int(age),
            "age": .string(ageText(age)), "assignee": text(found.assignee), "assignedAt": time(found.assignedAt),
            "closedAt": time(found.closedAt), "closedBy": text(found.closedBy), "outcome": text(found.outcome),
            "note": text(found.note), "flow": .string(found.flow), "cardId": text(found.cardID),
            "customerId": text(found.customerID), "lastFour": text(found.lastFour),
        ]
    }

    /// `3d 4h`, `5h 12m`, `7m`: a duration as analysts read it.
    static func ageText(_ seconds: Int) -> String {
        let days = seconds / 86_400
        let hours = seconds % 86_400 / 3600
        let minutes = seconds % 3600 / 60
        if days > 0 { return "\(days)d \(hours)h" }
        if hours > 0 { return "\(hours)h \(minutes)m" }
        return "\(minutes)m"
    }

    /// The newest 20 other attempts of the case's card or customer, with their current outcome.
    private static func related(
        column: String, _ value: String?, except attemptID: UUID, connection: PostgresConnection
    ) throws -> [JSONValue] {
        guard let value else { return [] }
        let filter = column == "card_id" ? "a.card_id" : "a.customer_id"
        return try connection.query(
            """
            SELECT a.attempt_id, a.created_at, a.channel, a.flow, a.card_id, o.outcome
            FROM provisioning_attempts a
            LEFT JOIN attempt_outcomes o ON o.attempt_id = a.attempt_id AND o.is_current
            WHERE \(unsafeSQL: filter) = \(value) AND a.attempt_id <> \(attemptID)
            ORDER BY a.created_at DESC LIMIT 20
            """
        ).map { row in
            let outcome: String? = try row.decode("outcome")
            let card: String? = try row.decode("card_id")
            return [
                "attemptId": .string(try row.decode("attempt_id", as: UUID.self).lowercasedString),
                "createdAt": .string(RFC3339.string(try row.decode("created_at"))),
                "channel": .string(try row.decode("channel")), "flow": .string(try row.decode("flow")),
                "cardId": card.map(JSONValue.string) ?? .null, "outcome": outcome.map(JSONValue.string) ?? .null,
            ]
        }
    }
}
