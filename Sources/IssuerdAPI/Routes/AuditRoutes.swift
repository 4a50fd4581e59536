import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdStorage

/// `GET /v1/admin/audit` (analyst or admin key, or the console's session): the audit log,
/// newest first. Entries never hold a PAN or a secret (what is audited is ids, names, versions
/// and diffs), so analysts may read them.
enum AuditRoutes {
    /// The kinds of entry: the first word of their action.
    static let kinds = [
        "apikey", "card", "cards", "case", "challenge", "console", "customer", "keys", "outbox", "outcome", "rules",
        "token",
    ]

    /// One entry: `details` as a JSON object, a rules entry's `diff` as an array.
    struct EntryView: Encodable {
        var id: Int64
        var sequence: Int64?
        var at: Date
        var actor: String
        var action: String
        var subject: String
        var details: JSONValue
    }

    struct Page: Encodable {
        var entries: [EntryView]
        /// Pass as `before` for the next (older) page; null on the last.
        var nextBefore: Int64?
    }

    static func register(in table: inout RouteTable, context: ServiceContext) {
        table.add(.get, "/v1/admin/audit") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let query = request.query
            try QueryParameters.allow(["kind", "since", "until", "before", "limit"], in: query)
            let kind = try AnalystRoutes.choice(query["kind"], field: "kind", from: kinds)
            let since = try query["since"].map { try date($0, field: "since") }
            let until = try query["until"].map { try date($0, field: "until") }
            if let since, let until, since >= until {
                throw APIErrors.invalidRequest("'since' must be before 'until'", field: "since")
            }
            let before = try query["before"].map { text -> Int64 in
                guard let id = Int64(text), id > 0 else {
                    throw APIErrors.invalidRequest("'before' must be an entry id from 'nextBefore'", field: "before")
                }
                return id
            }
            let limit = try QueryParameters.limit(query["limit"], default: 100, maximum: 500)
            let entries = try context.database.withConnection { connection in
                try AuditLog.entries(
                    kind: kind, since: since, until: until, before: before, limit: limit, connection: connection)
            }
            let views = entries.map { entry in
                EntryView(
                    id: entry.id, sequence: entry.sequence, at: entry.time, actor: entry.actor, action: entry.action,
                    subject: entry.subject, details: details(entry.details))
            }
            return try .json(Page(entries: views, nextBefore: entries.count == limit ? entries.last?.id : nil))
        }
    }

    /// The stored details object, with a `diff` (JSON text in the entry) as the array it holds.
    static func details(_ text: String) -> JSONValue {
        guard case .object(var members)? = parse(text) else { return .string(text) }
        if case .string(let diff)? = members["diff"], let parsed = parse(diff) {
            members["diff"] = parsed
        }
        return .object(members)
    }

    private static func parse(_ text: String) -> JSONValue? {
        Array(text.utf8).withUnsafeBufferPointer { JSONValue.parse(bytes: $0) }
    }

    private static func date(_ text: String, field: String) throws -> Date {
        guard let date = RFC3339.date(text) else {
            throw APIErrors.invalidRequest("'\(field)' must be an RFC 3339 timestamp", field: field)
        }
        return date
    }
}
