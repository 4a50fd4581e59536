import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdHistory
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
/// through its index (`attempts_list_keys`, sql/0042).
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

    /// One page.
    ///
    /// - Parameter ruleIndexOnly: Read a rule filter's page through the rule's index alone, as
    ///   when the time-ordered read runs out of its budget (tests compare the two reads).
    package static func page(
        _ filter: AttemptFilter, database: PostgresPool, ruleIndexOnly: Bool = false
    ) throws -> Page {
        let limit = filter.limit ?? 50
        return try database.withConnection { connection in
            let target = try Target(filter, connection: connection)
            var rows = try read(
                filter, target: target, after: filter.cursor, limit: limit + 1, ruleIndexOnly: ruleIndexOnly,
                connection: connection)
            let more = rows.count > limit
            if more { rows.removeLast() }
            return Page(
                query: filter.text, matchedAs: target.matchedAs, filters: filter.query,
                attempts: rows.map(\.summary), nextCursor: more ? rows.last?.cursor.token : nil)
        }
    }

    /// PostgreSQL's plan (`EXPLAIN`, text) for a rule filter's page read through the rule's index
    /// alone, with that read's settings: what tests check the index is asked for every key of
    /// ``listKeys(_:)``, and what an operator compares when a filtered page is slow. `settings`
    /// (`SET LOCAL …`) come after the read's own.
    package static func ruleIndexPlan(
        _ filter: AttemptFilter, settings: [String] = [], database: PostgresPool
    ) throws -> String {
        try database.withConnection { connection in
            let target = try Target(filter, connection: connection)
            return try connection.transaction { connection in
                for setting in readSettings + ruleIndexSettings + settings {
                    try connection.execute(unsafeSQL: setting)
                }
                return try connection.query(
                    statement(
                        filter, target: target, after: filter.cursor, limit: (filter.limit ?? 50) + 1,
                        ruleIndexOnly: true, prefix: "EXPLAIN ", columns: pageSelect)
                ).map { try $0.decode(0, as: String.self) }.joined(separator: "\n")
            }
        }
    }

    /// Every attempt the filter matches (from its cursor on), as CSV with `\r\n` line ends,
    /// written to `body` as it is read: one statement in one snapshot, read through a cursor a
    /// fetch of rows at a time, so memory holds one fetch and the body's buffer however long the
    /// list is, and the first rows leave before the last are read.
    ///
    /// - Returns: How many attempts were written.
    @discardableResult
    package static func csv(_ filter: AttemptFilter, into body: StreamedBody, database: PostgresPool) throws -> Int {
        try body.write(ChangedAttemptsCSV.line(csvColumns))
        return try database.withConnection { connection in
            let target = try Target(filter, connection: connection)
            return try connection.transaction(isolation: .repeatableRead) { connection in
                for setting in readSettings { try connection.execute(unsafeSQL: setting) }
                var written = 0
                let declare = statement(
                    filter, target: target, after: filter.cursor, limit: nil, ruleIndexOnly: false,
                    prefix: "DECLARE issuerd_attempts_csv NO SCROLL CURSOR FOR ", columns: csvSelect)
                _ = try BacktestHistory.streamPages(declare, cursor: "issuerd_attempts_csv", connection: connection) {
                    rows in
                    var text = ""
                    for row in rows {
                        text += ChangedAttemptsCSV.line([
                            try row.decode("attempt_id", as: UUID.self).lowercasedString,
                            ChangedAttemptsCSV.timestamp(try row.decode("created_at")), try row.decode("channel"),
                            try row.decode("flow"), try row.decode("decided_by"),
                            try row.decode("last_four", as: String?.self) ?? "",
                            try row.decode("customer_id", as: String?.self) ?? "",
                            try row.decode("device_id", as: String?.self) ?? "",
                        ])
                    }
                    try body.write(text)
                    written += rows.count
                    return true
                }
                return written
            }
        }
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
    /// instead (``read(_:target:after:limit:ruleIndexOnly:connection:)``), when the hourly
    /// roll-up cannot say how dense the rule is.
    package static let orderedBudget = "250ms"

    /// The time-ordered read's budget when the roll-up says it finds its page within
    /// ``denseScan`` attempts: the rule's index would read far more.
    package static let denseBudget = "2s"

    /// The attempts a time-ordered read may be expected to pass over for its page and still be
    /// the read for it; past ``sparseScan``, the rule's index is read at once.
    static let denseScan = 20_000.0
    static let sparseScan = 200_000.0

    /// How a rule filter's page is read.
    package enum RulePlan: Equatable {
        /// In time order, with this budget before the rule's index is read instead.
        case ordered(budget: String)
        /// Through the rule's index at once.
        case ruleIndex
    }

    /// Chooses the read of a rule filter's page from the hourly roll-up (``ConsoleRollup``): over
    /// the last 24 rolled-up hours where the page's read starts (the period's end, or the
    /// cursor's time), the attempts with the filter's flow and channel, and the hits of its rule
    /// that match the filter. A time-ordered read passes over about `limit × attempts ÷ matches`
    /// attempts for its page (a rule and channel taken as independent among the attempts of the
    /// filter's flow). With a customer, device
    /// or `q`, or no rolled-up hour there, the planner's own choice gets ``orderedBudget``.
    package static func rulePlan(
        _ filter: AttemptFilter, after: AttemptCursor?, limit: Int, connection: PostgresConnection
    ) throws -> RulePlan {
        let fallback = RulePlan.ordered(budget: orderedBudget)
        guard filter.text.isEmpty, filter.customerID == nil, filter.deviceID == nil else { return fallback }
        var end = filter.until
        if let after {
            let time = Date(timeIntervalSince1970: Double(after.microseconds) / 1_000_000)
            end = min(end ?? time, time)
        }
        let row = try connection.query(
            """
            WITH window_end AS (
                SELECT coalesce(\(end)::timestamptz, (SELECT max(hour) + interval '1 hour' FROM console_hourly_decisions)) AS at
            ), hours AS (
                SELECT at - interval '24 hours' AS since, at AS until FROM window_end
            ), decisions AS (
                SELECT coalesce(sum(attempts), 0)::float8 AS attempts,
                       coalesce(sum(attempts) FILTER (WHERE \(filter.flow)::text IS NULL OR d.flow = \(filter.flow)), 0)::float8
                           AS flowed,
                       coalesce(sum(attempts) FILTER (WHERE (\(filter.flow)::text IS NULL OR d.flow = \(filter.flow))
                                                        AND (\(filter.channel)::text IS NULL OR d.channel = \(filter.channel))),
                                0)::float8 AS filtered
                FROM console_hourly_decisions d, hours h
                WHERE d.hour >= greatest(h.since, coalesce(\(filter.since)::timestamptz, h.since)) AND d.hour < h.until
            )
            SELECT decisions.attempts, decisions.flowed, decisions.filtered,
                   (SELECT coalesce(sum(hits), 0) FROM console_hourly_rule_hits r, hours h
                    WHERE r.hour >= greatest(h.since, coalesce(\(filter.since)::timestamptz, h.since)) AND r.hour < h.until
                      AND (\(filter.flow)::text IS NULL OR r.flow = \(filter.flow))
                      AND (\(filter.rule)::text IS NULL OR r.rule_id = \(filter.rule))
                      AND (\(filter.decidedBy)::text IS NULL
                           OR (r.rule_id = \(filter.decidedBy) AND r.mode = 'live' AND r.outcome = r.flow AND r.flow <> 'green'))
                   )::float8 AS matches
            FROM decisions
            """
        ).first!
        let attempts = try row.decode("attempts", as: Double.self)
        let flowed = try row.decode("flowed", as: Double.self)
        let filtered = try row.decode("filtered", as: Double.self)
        let matches = try row.decode("matches", as: Double.self)
        guard attempts > 0 else { return fallback }
        // The rule's matches (of the filter's flow) with the filter's channel too: the hits'
        // roll-up has no channel, so the channel's share among the attempts of that flow.
        let channelShare = filter.channel == nil ? 1 : flowed > 0 ? filtered / flowed : 0
        let expected = matches * channelShare
        guard expected > 0 else { return .ruleIndex }
        let scan = Double(limit) * attempts / expected
        if scan <= denseScan { return .ordered(budget: denseBudget) }
        if scan > sparseScan { return .ruleIndex }
        return fallback
    }

    /// The rows, newest first. With a rule filter, the planner cannot tell a rule hitting one
    /// attempt in ten from one hitting none (both are outside its most common values): it reads
    /// in time order, which finds a frequent rule's page in a few hundred rows but reads the whole
    /// history for a rare one. So the hourly roll-up's counts choose (``rulePlan(_:after:limit:connection:)``):
    /// a rare rule is read through its index at once, a frequent one in time order with
    /// ``denseBudget``, and one in between (or one the roll-up cannot judge) in time order with
    /// ``orderedBudget`` (a dense page with a channel first gets ``shortBudget``, then, if the
    /// index holds few matches, is read through it: ``fewMatches(_:limit:connection:)``). Past the
    /// budget (SQLSTATE 57014) the
    /// same statement runs again without ordered index scans, through the rule's GIN index and a
    /// sort of its matches. Either way the answer is the same rows. In that second read the time
    /// bounds compare `created_at + interval '0'`, which no index covers: otherwise the planner
    /// combines the rule's index with the time index (a BitmapAnd) and rechecks the rule on every
    /// attempt in the period, which took tens of seconds on a large history; and its `work_mem`
    /// keeps the bitmap of a rule's matches exact (one bit an attempt) rather than whole pages to
    /// recheck. Neither read compiles its statement (`jit` off): for a page, PostgreSQL's JIT,
    /// chosen by the estimated cost of a large table, took 0.2–0.3 s, the whole budget.
    private static func read(
        _ filter: AttemptFilter, target: Target, after: AttemptCursor?, limit: Int, ruleIndexOnly: Bool,
        connection: PostgresConnection
    ) throws -> [Row] {
        guard filter.rule != nil || filter.decidedBy != nil else {
            return try read(
                filter, target: target, after: after, limit: limit, settings: [], ruleIndexOnly: false,
                connection: connection)
        }
        let plan = ruleIndexOnly ? .ruleIndex : try rulePlan(filter, after: after, limit: limit, connection: connection)
        // The page in time order, or nil when that read ran out of `budget`.
        func ordered(_ budget: String) throws -> [Row]? {
            do {
                return try read(
                    filter, target: target, after: after, limit: limit,
                    settings: ["SET LOCAL statement_timeout = '\(budget)'"], ruleIndexOnly: false,
                    connection: connection)
            } catch let error as PostgresError where error.sqlState == "57014" {
                return nil
            }
        }
        if case .ordered(let budget) = plan {
            // A page judged dense with a channel was judged taking rule and channel as
            // independent: a short try first; past it, when the index holds few matches (a rule
            // that never meets the channel), they are read from it instead of the long try.
            if budget == denseBudget, filter.channel != nil {
                if let rows = try ordered(shortBudget) { return rows }
                if try !fewMatches(filter, connection: connection), let rows = try ordered(budget) { return rows }
            } else if let rows = try ordered(budget) {
                return rows
            }
        }
        return try read(
            filter, target: target, after: after, limit: limit, settings: ruleIndexSettings, ruleIndexOnly: true,
            connection: connection)
    }

    /// Whether the index holds at most `limit` attempts with the filter's keys over
    /// the whole history (``listKeys(_:)``; the other filters only narrow them), so that reading
    /// them all through the index is cheap. Asked when the short try of a page judged dense with a
    /// channel ran out: the roll-up's estimate of such a page takes rule and channel as independent,
    /// and a rule that is frequent but never meets the channel would have the time-ordered read
    /// pass over the whole history to its budget. The count walks the keys' lists in the index
    /// and fetches at most that many rows; it gets ``fewMatchesBudget``, past which the answer is
    /// no.
    package static func fewMatches(
        _ filter: AttemptFilter, limit: Int = fewMatchesLimit, connection: PostgresConnection
    ) throws -> Bool {
        guard let keys = listKeys(filter) else { return false }
        do {
            return try connection.transaction { connection in
                // The index's bitmap only: a sequential scan stopping at the limit would read the
                // whole table when the keys match nothing.
                let settings =
                    readSettings + ruleIndexSettings + [
                        "SET LOCAL enable_seqscan = off", "SET LOCAL statement_timeout = '\(fewMatchesBudget)'",
                    ]
                for setting in settings { try connection.execute(unsafeSQL: setting) }
                let count = try connection.query(
                    """
                    SELECT count(*) AS n FROM (
                        SELECT 1 FROM provisioning_attempts a
                        WHERE attempt_list_keys(a.hits, a.flow, a.channel) @> \(keys)::text[]
                        LIMIT \(limit + 1)) s
                    """
                ).first?.decode("n", as: Int.self)
                return (count ?? 0) <= limit
            }
        } catch let error as PostgresError where error.sqlState == "57014" {
            return false
        }
    }

    /// The first try of a page judged dense with a channel (see ``read(_:target:after:limit:ruleIndexOnly:connection:)``).
    static let shortBudget = "150ms"

    /// At most this many matches in the whole history are read through the index at once.
    static let fewMatchesLimit = 500
    static let fewMatchesBudget = "200ms"

    /// Every read's settings: planned for its values, never compiled.
    private static let readSettings = ["SET LOCAL plan_cache_mode = force_custom_plan", "SET LOCAL jit = off"]

    /// The read through the rule's index: no ordered index scans, and a bitmap kept exact.
    private static let ruleIndexSettings = ["SET LOCAL enable_indexscan = off", "SET LOCAL work_mem = '32MB'"]

    private static func read(
        _ filter: AttemptFilter, target: Target, after: AttemptCursor?, limit: Int, settings: [String],
        ruleIndexOnly: Bool, connection: PostgresConnection
    ) throws -> [Row] {
        try connection.transaction { connection in
            for setting in readSettings + settings { try connection.execute(unsafeSQL: setting) }
            return try connection.query(
                statement(
                    filter, target: target, after: after, limit: limit, ruleIndexOnly: ruleIndexOnly,
                    columns: pageSelect)
            ).map { row in
                let id = try row.decode("attempt_id", as: UUID.self)
                return Row(
                    summary: Summary(
                        attemptId: id.lowercasedString, createdAt: try row.decode("created_at"),
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

    /// A page's columns.
    private static let pageSelect = """
        a.attempt_id, (extract(epoch FROM a.created_at) * 1000000)::bigint AS at_us, a.created_at,
        a.channel, a.card_id, c.last_four, a.customer_id, a.device_id,
        coalesce(a.inputs ->> 'card.network', a.inputs -> 'attributes' ->> 'card.network', c.payment_network, 'unknown') AS network,
        a.flow, a.decision, a.ruleset_version,
        ARRAY(SELECT h ->> 'rule' FROM jsonb_array_elements(CASE WHEN jsonb_typeof(a.hits) = 'array' THEN a.hits ELSE '[]' END) h
              WHERE jsonb_typeof(h) = 'object' AND coalesce(h ->> 'mode', 'live') = 'live' AND h ->> 'rule' IS NOT NULL) AS rules,
        \(decidedBySQL) AS decided_by
        """

    /// The CSV's columns: only what it prints (no attempt's inputs parsed for its network), its
    /// deciding rules as one text, so the rows can be read in binary format.
    private static let csvSelect = """
        a.attempt_id, a.created_at, a.channel, a.flow, c.last_four, a.customer_id, a.device_id,
        array_to_string(\(decidedBySQL), ' ') AS decided_by
        """

    /// The rules that decided an attempt, from its rule keys (sql/0031).
    private static let decidedBySQL =
        "ARRAY(SELECT substr(k, 9) FROM unnest(attempt_rule_keys(a.hits, a.flow)) k WHERE k LIKE 'decided:%')"

    /// The rule keys an attempt must hold for a rule filter, as `attempt_rule_keys` gives them
    /// (sql/0031): what the time-ordered read checks on each attempt it passes. Nil without a
    /// rule filter.
    package static func ruleKeys(_ filter: AttemptFilter) -> [String]? {
        guard filter.rule != nil || filter.decidedBy != nil else { return nil }
        return [filter.rule.map { "hit:" + $0 }, filter.decidedBy.map { "decided:" + $0 }].compactMap { $0 }
    }

    /// The keys of `attempts_list_keys` (sql/0042) an attempt must hold for a rule filter: what
    /// the read through the index asks it for. With a flow or channel, the rule's keys qualified
    /// by them (`hit:<rule>@<flow>`, `hit:<rule>#<channel>`, `decided:<rule>#<channel>`), whose
    /// lists hold only the attempts listed, so a frequent rule with a flow or channel it never
    /// meets finds an empty list. Nil without a rule filter.
    package static func listKeys(_ filter: AttemptFilter) -> [String]? {
        guard filter.rule != nil || filter.decidedBy != nil else { return nil }
        var keys: [String] = []
        if let rule = filter.rule {
            let hit = "hit:" + rule
            if let flow = filter.flow { keys.append(hit + "@" + flow) }
            if let channel = filter.channel { keys.append(hit + "#" + channel) }
            if keys.isEmpty { keys.append(hit) }
        }
        if let rule = filter.decidedBy {
            keys.append("decided:" + rule + (filter.channel.map { "#" + $0 } ?? ""))
            if let flow = filter.flow { keys.append("hit:" + rule + "@" + flow) }
        }
        return keys
    }

    /// `prefix` and the list's statement: the `columns` of the attempts the filter matches after
    /// `after`, newest first, at most `limit` (nil: all). With `ruleIndexOnly`, the time bounds
    /// compare an expression no index covers (``read(_:target:after:limit:ruleIndexOnly:connection:)``).
    private static func statement(
        _ filter: AttemptFilter, target: Target, after: AttemptCursor?, limit: Int?, ruleIndexOnly: Bool,
        prefix: String = "", columns: String
    ) -> PostgresQuery {
        // Either the column or an expression equal to it that no index matches (see above).
        let at = ruleIndexOnly ? "(a.created_at + interval '0')" : "a.created_at"
        // The time-ordered read checks each attempt's rule keys; the read through the index asks
        // it for its own keys (no index covers the first, so the planner never mixes the two).
        let keys = ruleIndexOnly ? listKeys(filter) : ruleKeys(filter)
        let keyed = ruleIndexOnly ? "attempt_list_keys(a.hits, a.flow, a.channel)" : "attempt_rule_keys(a.hits, a.flow)"
        return """
            \(unsafeSQL: prefix)SELECT \(unsafeSQL: columns)
            FROM provisioning_attempts a LEFT JOIN cards c ON c.card_id = a.card_id
            WHERE \(unsafeSQL: at) > '-infinity'
              AND (\(filter.since)::timestamptz IS NULL OR \(unsafeSQL: at) >= \(filter.since))
              AND (\(filter.until)::timestamptz IS NULL OR \(unsafeSQL: at) < \(filter.until))
              AND (\(filter.flow)::text IS NULL OR a.flow = \(filter.flow))
              AND (\(filter.channel)::text IS NULL OR a.channel = \(filter.channel))
              AND (\(filter.customerID)::text IS NULL OR a.customer_id = \(filter.customerID))
              AND (\(filter.deviceID)::text IS NULL OR a.device_id = \(filter.deviceID))
              AND (\(keys)::text[] IS NULL OR \(unsafeSQL: keyed) @> \(keys)::text[])
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
    }
}
