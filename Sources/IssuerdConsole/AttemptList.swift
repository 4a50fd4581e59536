import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres
import IssuerdRisk

/// The attempts list behind `GET /v1/admin/attempts` and the console's Attempts page: stored
/// attempts matching an ``AttemptFilter``, newest first, a page at a time, or all of them as CSV.
///
/// Pages follow a cursor (the last attempt's time and id), never an offset, so a page deep in
/// a long history costs what the first does, and attempts arriving meanwhile do not shift it:
/// the cursor's time bounds the index scan (`created_at <=`), its id breaks ties.
/// The statement is one for every combination of filters, each absent one a `NULL` that
/// planning folds away; it is planned for each request's values (`plan_cache_mode`), since a
/// rule hitting one attempt in ten is best read in time order and one hitting one in a million
/// through its index (`attempts_rule_keys`, sql/0031).
package enum AttemptList {
    package struct Summary: Encodable, Sendable {
        package var attemptId: String
        package var createdAt: Date
        package var channel: String
        package var cardId: String?
        package var lastFour: String?
        package var customerId: String?
        package var deviceId: String?
        package var network: String
        package var flow: String
        package var decision: String
        package var rulesetVersion: String
        /// The live rules that hit.
        package var rules: [String]
        /// The rules that decided the flow: live hits whose outcome is the flow (none when green).
        package var decidedBy: [String]
    }

    package struct Page: Encodable, Sendable {
        package var query: String
        /// What `q` was read as: `attempt`, `last_four`, `id` (card, customer or device), or
        /// `recent` when there is no `q`.
        package var matchedAs: String
        /// The filters applied, as query parameters.
        package var filters: [String: String]
        package var attempts: [Summary]
        /// The `cursor` of the next page; null on the last one.
        package var nextCursor: String?

        private enum CodingKeys: String, CodingKey {
            case query, matchedAs, filters, attempts, nextCursor
        }

        /// Every member, `nextCursor` as null on the last page (not left out).
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(query, forKey: .query)
            try container.encode(matchedAs, forKey: .matchedAs)
            try container.encode(filters, forKey: .filters)
            try container.encode(attempts, forKey: .attempts)
            try container.encode(nextCursor, forKey: .nextCursor)
        }
    }

    /// The CSV's columns.
    package static let csvColumns = [
        "attempt_id", "time", "channel", "flow", "decided_by", "card_last_four", "customer_id", "device_id",
    ]

    /// Rows the CSV reads per statement: what it holds in memory at a time.
    package static let csvChunk = 2_000

    /// One page.
    package static func page(_ filter: AttemptFilter, database: PostgresPool) throws -> Page {
        let limit = filter.limit ?? 50
        return try database.withConnection { connection in
            let target = try Target(filter, connection: connection)
            var rows = try read(filter, target: target, after: filter.cursor, limit: limit + 1, connection: connection)
            let more = rows.count > limit
            if more { rows.removeLast() }
            return Page(
                query: filter.text, matchedAs: target.matchedAs, filters: filter.query,
                attempts: rows.map(\.summary), nextCursor: more ? rows.last?.cursor.token : nil)
        }
    }

    /// Every attempt the filter matches (from its cursor on), as CSV with `\r\n` line ends,
    /// written to `body` ``csvChunk`` rows at a time.
    ///
    /// - Returns: How many attempts were written.
    @discardableResult
    package static func csv(_ filter: AttemptFilter, into body: SpooledBody, database: PostgresPool) throws -> Int {
        try body.append(ChangedAttemptsCSV.line(csvColumns))
        var written = 0
        try database.withConnection { connection in
            let target = try Target(filter, connection: connection)
            var after = filter.cursor
            while true {
                let rows = try read(filter, target: target, after: after, limit: csvChunk, connection: connection)
                var text = ""
                for row in rows {
                    let summary = row.summary
                    text += ChangedAttemptsCSV.line([
                        summary.attemptId, ChangedAttemptsCSV.timestamp(summary.createdAt), summary.channel,
                        summary.flow, summary.decidedBy.joined(separator: " "), summary.lastFour ?? "",
                        summary.customerId ?? "", summary.deviceId ?? "",
                    ])
                }
                try body.append(text)
                written += rows.count
                guard rows.count == csvChunk, let last = rows.last else { break }
                after = last.cursor
            }
        }
        return written
    }

    /// What `q` selects, resolved before the list is read: each form is one index look-up.
    private struct Target {
        var matchedAs = "recent"
        var attemptID: UUID?
        var cardIDs: [String]?
        var anyID: String?

        init(_ filter: AttemptFilter, connection: PostgresConnection) throws {
            let text = filter.text
            guard !text.isEmpty else { return }
            if text.utf8.count == 36, let id = UUID(uuidString: text) {
                (matchedAs, attemptID) = ("attempt", id)
                return
            }
            if text.utf8.count == 4, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                let cards = try connection.query("SELECT card_id FROM cards WHERE last_four = \(text) LIMIT 10000")
                    .map { try $0.decode("card_id", as: String.self) }
                if !cards.isEmpty {
                    (matchedAs, cardIDs) = ("last_four", cards)
                    return
                }
            }
            (matchedAs, anyID) = ("id", text)
        }
    }

    private struct Row {
        var summary: Summary
        var cursor: AttemptCursor
    }

    /// How long the time-ordered read of a rule filter may take before the rule's index is read
    /// instead (``read(_:target:after:limit:connection:)``).
    static let orderedBudget = "250ms"

    /// The rows, newest first. With a rule filter, the planner cannot tell a rule hitting one
    /// attempt in ten from one hitting none (both are outside its most common values): it reads
    /// in time order, which finds a frequent rule's page in a few hundred rows but reads the whole
    /// history for a rare one. So that read has ``orderedBudget``; past it (SQLSTATE 57014) the
    /// same statement runs again without ordered index scans, through the rule's GIN index and a
    /// sort of its matches. Either way the answer is the same rows. In that second read the time
    /// bounds compare `created_at + interval '0'`, which no index covers: otherwise the planner
    /// combines the rule's index with the time index (a BitmapAnd) and rechecks the rule on every
    /// attempt in the period, which took tens of seconds on a large history; and its `work_mem`
    /// keeps the bitmap of a rule's matches exact (one bit an attempt) rather than whole pages to
    /// recheck.
    private static func read(
        _ filter: AttemptFilter, target: Target, after: AttemptCursor?, limit: Int, connection: PostgresConnection
    ) throws -> [Row] {
        guard filter.rule != nil || filter.decidedBy != nil else {
            return try read(
                filter, target: target, after: after, limit: limit, settings: [], ruleIndexOnly: false,
                connection: connection)
        }
        do {
            return try read(
                filter, target: target, after: after, limit: limit,
                settings: ["SET LOCAL statement_timeout = '\(orderedBudget)'"], ruleIndexOnly: false,
                connection: connection)
        } catch let error as PostgresError where error.sqlState == "57014" {
            return try read(
                filter, target: target, after: after, limit: limit,
                settings: ["SET LOCAL enable_indexscan = off", "SET LOCAL work_mem = '32MB'"],
                ruleIndexOnly: true, connection: connection)
        }
    }

    private static func read(
        _ filter: AttemptFilter, target: Target, after: AttemptCursor?, limit: Int, settings: [String],
        ruleIndexOnly: Bool, connection: PostgresConnection
    ) throws -> [Row] {
        // Either the column or an expression equal to it that no index matches (see above).
        let at = ruleIndexOnly ? "(a.created_at + interval '0')" : "a.created_at"
        let ruleKey = filter.rule.map { "hit:" + $0 }
        let decidedKey = filter.decidedBy.map { "decided:" + $0 }
        return try connection.transaction { connection in
            try connection.execute("SET LOCAL plan_cache_mode = force_custom_plan")
            for setting in settings { try connection.execute(unsafeSQL: setting) }
            return try connection.query(
                """
                SELECT a.attempt_id, (extract(epoch FROM a.created_at) * 1000000)::bigint AS at_us, a.created_at,
                       a.channel, a.card_id, c.last_four, a.customer_id, a.device_id,
                       coalesce(a.inputs ->> 'card.network', a.inputs -> 'attributes' ->> 'card.network', c.payment_network, 'unknown') AS network,
                       a.flow, a.decision, a.ruleset_version,
                       ARRAY(SELECT h ->> 'rule' FROM jsonb_array_elements(CASE WHEN jsonb_typeof(a.hits) = 'array' THEN a.hits ELSE '[]' END) h
                             WHERE jsonb_typeof(h) = 'object' AND coalesce(h ->> 'mode', 'live') = 'live' AND h ->> 'rule' IS NOT NULL) AS rules,
                       ARRAY(SELECT substr(k, 9) FROM unnest(attempt_rule_keys(a.hits, a.flow)) k WHERE k LIKE 'decided:%') AS decided_by
                FROM provisioning_attempts a LEFT JOIN cards c ON c.card_id = a.card_id
                WHERE \(unsafeSQL: at) > '-infinity'
                  AND (\(filter.since)::timestamptz IS NULL OR \(unsafeSQL: at) >= \(filter.since))
                  AND (\(filter.until)::timestamptz IS NULL OR \(unsafeSQL: at) < \(filter.until))
                  AND (\(filter.flow)::text IS NULL OR a.flow = \(filter.flow))
                  AND (\(filter.channel)::text IS NULL OR a.channel = \(filter.channel))
                  AND (\(filter.customerID)::text IS NULL OR a.customer_id = \(filter.customerID))
                  AND (\(filter.deviceID)::text IS NULL OR a.device_id = \(filter.deviceID))
                  AND (\(ruleKey)::text IS NULL OR attempt_rule_keys(a.hits, a.flow) @> ARRAY[\(ruleKey)::text])
                  AND (\(decidedKey)::text IS NULL OR attempt_rule_keys(a.hits, a.flow) @> ARRAY[\(decidedKey)::text])
                  AND (\(target.attemptID)::uuid IS NULL OR a.attempt_id = \(target.attemptID))
                  AND (\(target.cardIDs)::text[] IS NULL OR a.card_id = ANY(\(target.cardIDs)::text[]))
                  AND (\(target.anyID)::text IS NULL OR a.card_id = \(target.anyID) OR a.customer_id = \(target.anyID)
                       OR a.device_id = \(target.anyID))
                  AND (\(after?.microseconds)::bigint IS NULL
                       OR (\(unsafeSQL: at) <= timestamptz 'epoch' + \(after?.microseconds)::bigint * interval '1 microsecond'
                           AND (\(unsafeSQL: at) < timestamptz 'epoch' + \(after?.microseconds)::bigint * interval '1 microsecond'
                                OR a.attempt_id < \(after?.attemptID)::uuid)))
                ORDER BY a.created_at DESC, a.attempt_id DESC LIMIT \(limit)
                """
            ).map { row in
                let id = try row.decode("attempt_id", as: UUID.self)
                return Row(
                    summary: Summary(
                        attemptId: id.uuidString.lowercased(), createdAt: try row.decode("created_at"),
                        channel: try row.decode("channel"), cardId: try row.decode("card_id"),
                        lastFour: try row.decode("last_four"), customerId: try row.decode("customer_id"),
                        deviceId: try row.decode("device_id"), network: try row.decode("network"),
                        flow: try row.decode("flow"), decision: try row.decode("decision"),
                        rulesetVersion: try row.decode("ruleset_version"), rules: try row.decode("rules"),
                        decidedBy: try row.decode("decided_by")),
                    cursor: AttemptCursor(microseconds: try row.decode("at_us"), attemptID: id))
            }
        }
    }
}
