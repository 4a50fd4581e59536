import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdStorage

/// `POST /v1/admin/outcomes` (analyst or admin; CSRF from the console): what became of
/// decisions, up to ``OutcomeStore/batchLimit`` reports a call. One bad report does not stop the
/// others; each is recorded whole (its row and its audit entry) or not at all.
enum OutcomeRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        let recorded = context.metrics.counter(
            "issuerd_outcomes_total", help: "Outcome reports recorded, unchanged or refused.", labels: ["result"])
        for result in ["recorded", "unchanged", "refused"] { recorded.increment(by: 0, labels: [result]) }

        table.add(.post, "/v1/admin/outcomes") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            guard case .object(let body) = try request.decodeJSON(JSONValue.self),
                case .array(let items)? = body["outcomes"]
            else {
                throw APIErrors.invalidRequest("the body must be {\"outcomes\": [...]}", field: "outcomes")
            }
            guard (1...OutcomeStore.batchLimit).contains(items.count) else {
                throw APIErrors.invalidRequest(
                    "'outcomes' must hold 1 to \(OutcomeStore.batchLimit) reports", field: "outcomes")
            }
            let now = context.now
            var errors: [(index: Int, error: OutcomeInputError)] = []
            var valid: [(index: Int, report: OutcomeReport)] = []
            for (index, item) in items.enumerated() {
                switch fields(item).flatMap({ OutcomeReport.validate($0, now: now) }) {
                case .success(let report): valid.append((index, report))
                case .failure(let error): errors.append((index, error))
                }
            }
            let applied =
                valid.isEmpty
                ? []
                : try context.database.transaction { connection in
                    try OutcomeStore.record(
                        valid.map(\.report), actor: principal.auditActor, now: now, connection: connection)
                }
            var counts = (recorded: 0, unchanged: 0)
            for (item, result) in zip(valid, applied) {
                switch result {
                case .recorded: counts.recorded += 1
                case .unchanged: counts.unchanged += 1
                case .refused(let error): errors.append((item.index, error))
                }
            }
            errors.sort { $0.index < $1.index }
            recorded.increment(by: Double(counts.recorded), labels: ["recorded"])
            recorded.increment(by: Double(counts.unchanged), labels: ["unchanged"])
            recorded.increment(by: Double(errors.count), labels: ["refused"])
            if counts.recorded > 0 {
                request.logger.info(
                    "outcomes recorded",
                    [
                        "recorded": .int(counts.recorded), "unchanged": .int(counts.unchanged),
                        "errors": .int(errors.count),
                    ])
            }
            return try .json(
                JSONValue.object([
                    "recorded": .int(counts.recorded), "unchanged": .int(counts.unchanged),
                    "errors": .array(errors.map(itemError)),
                ]))
        }
    }

    /// One item's fields as text; a member of the wrong JSON type is that item's error.
    static func fields(_ item: JSONValue) -> Result<OutcomeReport.Fields, OutcomeInputError> {
        guard case .object(let members) = item else {
            return .failure(OutcomeInputError(code: "invalid_outcome", message: "each report must be a JSON object"))
        }
        func text(_ key: String) -> Result<String?, OutcomeInputError> {
            switch members[key] {
            case nil, .null?: .success(nil)
            case .string(let value)?: .success(value)
            default:
                .failure(OutcomeInputError(code: "invalid_outcome", field: key, message: "'\(key)' must be a string"))
            }
        }
        var fields = OutcomeReport.Fields()
        do {
            fields.attemptID = try text("attemptId").get()
            fields.tokenReference = try text("tokenReference").get()
            fields.outcome = try text("outcome").get()
            fields.source = try text("source").get()
            fields.reportedAt = try text("reportedAt").get()
            fields.note = try text("note").get()
        } catch {
            return .failure(error)
        }
        switch members["amountLost"] {
        case nil, .null?: break
        case .object(let amount)?:
            guard case .int(let value)? = amount["value"], case .string(let currency)? = amount["currency"] else {
                return .failure(
                    OutcomeInputError(
                        code: "invalid_outcome", field: "amountLost",
                        message: "'amountLost' must be {\"value\": whole minor units, \"currency\": \"KRW\"}"))
            }
            fields.amountLost = String(value)
            fields.currency = currency
        default:
            return .failure(
                OutcomeInputError(
                    code: "invalid_outcome", field: "amountLost", message: "'amountLost' must be an object"))
        }
        return .success(fields)
    }

    private static func itemError(_ item: (index: Int, error: OutcomeInputError)) -> JSONValue {
        ["index": .int(item.index), "code": .string(item.error.code), "message": .string(item.error.message)]
    }

    /// A kept report as `GET /v1/admin/attempts/{attemptId}` shows it.
    static func json(_ stored: OutcomeStore.Stored) -> JSONValue {
        [
            "outcomeId": .int(Int(stored.id)), "outcome": .string(stored.label), "source": .string(stored.source),
            "confirmed": .bool(stored.confirmed), "reportedAt": .string(RFC3339.string(stored.reportedAt)),
            "amountLost": stored.amountLost.map { amount in
                ["value": .int(Int(amount)), "currency": .string(stored.currency ?? "")]
            } ?? .null,
            "note": .string(stored.note), "tokenReference": stored.tokenReference.map(JSONValue.string) ?? .null,
            "recordedBy": .string(stored.recordedBy), "recordedAt": .string(RFC3339.string(stored.recordedAt)),
        ]
    }
}
