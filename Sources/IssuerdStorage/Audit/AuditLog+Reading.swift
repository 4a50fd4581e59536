import Foundation
import IssuerdPostgres

extension AuditLog {
    /// One entry as `GET /v1/admin/audit` lists it.
    package struct Entry: Sendable {
        /// The order of arrival (entries are sealed into the chain in this order).
        package var id: Int64
        /// The chain position; nil until the sealer chained it.
        package var sequence: Int64?
        package var time: Date
        package var actor: String
        package var action: String
        package var subject: String
        /// The details as stored (and hashed): a JSON object of strings.
        package var details: String
    }

    /// Entries newest first, `before` an id when paging back.
    ///
    /// - Parameters:
    ///   - kind: The first word of the action (`rules` for `rules.*`); nil for every entry.
    package static func entries(
        kind: String?, since: Date?, until: Date?, before: Int64?, limit: Int, connection: PostgresConnection
    ) throws -> [Entry] {
        let prefix = kind.map { $0 + "." }
        let sinceMilliseconds = since.map { Int64(($0.timeIntervalSince1970 * 1000).rounded(.down)) }
        let untilMilliseconds = until.map { Int64(($0.timeIntervalSince1970 * 1000).rounded(.down)) }
        return try connection.query(
            """
            SELECT id, seq, at_ms, actor, action, subject, details FROM audit_log
            WHERE (\(prefix)::text IS NULL OR starts_with(action, \(prefix)::text))
              AND (\(sinceMilliseconds)::bigint IS NULL OR at_ms >= \(sinceMilliseconds)::bigint)
              AND (\(untilMilliseconds)::bigint IS NULL OR at_ms < \(untilMilliseconds)::bigint)
              AND (\(before)::bigint IS NULL OR id < \(before)::bigint)
            ORDER BY id DESC LIMIT \(limit)
            """
        ).map { row in
            Entry(
                id: try row.decode("id"), sequence: try row.decode("seq"),
                time: Date(timeIntervalSince1970: Double(try row.decode("at_ms", as: Int64.self)) / 1000),
                actor: try row.decode("actor"), action: try row.decode("action"), subject: try row.decode("subject"),
                details: try row.decode("details"))
        }
    }
}
