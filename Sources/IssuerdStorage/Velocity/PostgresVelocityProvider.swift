import Foundation
import IssuerdPostgres
import IssuerdRisk

/// Answers a request's velocity questions from PostgreSQL in one round trip.
///
/// Sources (docs/rules.md, "Functions"):
/// - `attempts`, `distinct_cards`, `distinct_names`: `provisioning_attempts` (names by
///   `cardholder_name_hash`, never the name);
/// - `failed_otps`: `challenge_failures` of kind `wrong_code`;
/// - `failed_stepups`: `challenge_failures` of kind `locked` or `expired` (a step-up that
///   ended without success, whatever the method);
/// - `token_deletions`: `token_events` with event `deleted` (by device through `tokens`, by
///   customer through `cards`).
///
/// A query whose subject key is missing is nil (unknown) without asking the database.
package struct PostgresVelocityProvider: VelocityProvider, @unchecked Sendable {
    // @unchecked: the connection is not Sendable, but a provider lives only for one synchronous
    // `Ruleset.evaluate` call on the thread that checked the connection out.
    let connection: PostgresConnection

    /// A provider asking on `connection`.
    package init(connection: PostgresConnection) {
        self.connection = connection
    }

    package func values(for batch: VelocityBatch) throws -> [Int?] {
        let velocity = VelocitySQL(batch)
        guard !velocity.isEmpty else { return [Int?](repeating: nil, count: batch.queries.count) }
        var sql = PostgresQuery.StringInterpolation(literalCapacity: 512, interpolationCount: batch.queries.count * 3)
        sql.appendLiteral("SELECT true")
        velocity.appendSelectList(into: &sql)
        guard let row = try connection.query(PostgresQuery(stringInterpolation: sql)).first else {
            return [Int?](repeating: nil, count: batch.queries.count)
        }
        return try velocity.values(in: row)
    }
}

/// The SQL answering a velocity batch, to fold into a larger statement's select list: one
/// scalar subquery per event table and subject key, scanning the widest window once, with one
/// filtered aggregate per query (`count(*) FILTER (WHERE created_at >= $lower)`), returned as
/// an array in a column `velocity<n>`.
///
/// The shape matters for planning, which PostgreSQL does for every execution under custom plans
/// (`PostgresConnection`'s default): a scalar subquery per velocity query cost more to plan
/// than to run, and `LATERAL` subqueries, which join planning has to order, cost more still
/// (docs/performance.md).
///
/// A subject key is compared with a bound parameter (the subject's id), or, for a statement that
/// finds the subject itself (the TSP authorization finds the card by its PAN fingerprint), with
/// a column of the enclosing query named in `keyColumns`: the subqueries are then correlated to
/// the joined row and ask for the card and customer it found.
///
/// A push rate limit's count (``RecentPushes``) is folded into the attempts subquery of its key:
/// the scan then reaches back to the wider of its window and the velocity windows, with no upper
/// bound, and each velocity count takes its own bounds as filters. The rate limit and the
/// velocity queries of a card or a customer read the same rows; scanned once, an in-app
/// request's context statement visits each of the customer's recent attempts once instead of
/// twice (3 % of PostgreSQL's instructions per request, docs/performance.md).
package struct VelocitySQL {
    private let batch: VelocityBatch
    private let recent: [RecentPushes]
    private let groups: [Group]

    /// A rate limit's count: the subject's in-app and Wallet-extension attempts in the
    /// `windowSeconds` before the batch's time, with no upper bound (a concurrent request that
    /// took the customer's lock first may have stamped its attempt later than this request's
    /// time, and it must count).
    package struct RecentPushes: Hashable, Sendable {
        package var key: VelocityKey
        package var windowSeconds: TimeInterval

        /// Creates the value from every stored property.
        package init(key: VelocityKey, windowSeconds: TimeInterval) {
            self.key = key
            self.windowSeconds = windowSeconds
        }
    }

    private enum Source: Hashable {
        case attempts, challengeFailures, tokenDeletions

        init(_ metric: VelocityMetric) {
            switch metric {
            case .attempts, .distinctCards, .distinctNames: self = .attempts
            case .failedOTPs, .failedStepUps: self = .challengeFailures
            case .tokenDeletions: self = .tokenDeletions
            }
        }
    }

    /// What a group's key column is compared with.
    private enum Subject {
        /// The subject's id, bound as a parameter.
        case id(String)
        /// A column of the enclosing query (trusted SQL from this module, never input).
        case column(String)
    }

    private struct Group {
        var source: Source
        var key: VelocityKey
        var subject: Subject
        /// Batch indices of the group's queries.
        var members: [Int]
        /// Indices in `recent` of the rate-limit counts folded into the group (attempts only).
        var recent: [Int] = []
    }

    /// The SQL for `batch`, and for the rate-limit counts `recent`; a key in `keyColumns` is read
    /// from that column of the enclosing query instead of the batch subject's id (so it is asked
    /// even when the subject has none). A rate-limit count whose key the subject lacks is not
    /// asked (``recentPushes(in:)``).
    package init(_ batch: VelocityBatch, keyColumns: [VelocityKey: String] = [:], recent: [RecentPushes] = []) {
        self.batch = batch
        self.recent = recent
        var groups: [Group] = []
        func subject(_ key: VelocityKey) -> Subject? {
            if let column = keyColumns[key] { return .column(column) }
            return batch.subject.id(for: key).map(Subject.id)
        }
        for (index, query) in batch.queries.enumerated() {
            guard let subject = subject(query.key) else { continue }
            let source = Source(query.metric)
            if let existing = groups.firstIndex(where: { $0.source == source && $0.key == query.key }) {
                groups[existing].members.append(index)
            } else {
                groups.append(Group(source: source, key: query.key, subject: subject, members: [index]))
            }
        }
        for (index, count) in recent.enumerated() {
            guard let subject = subject(count.key) else { continue }
            if let existing = groups.firstIndex(where: { $0.source == .attempts && $0.key == count.key }) {
                groups[existing].recent.append(index)
            } else {
                groups.append(Group(source: .attempts, key: count.key, subject: subject, members: [], recent: [index]))
            }
        }
        self.groups = groups
    }

    /// What a statement asking a batch writes as text, beside its values: the queries, and
    /// which subject keys are known (a query whose key is missing is left out). A statement
    /// kept by this shape (``PostgresStatementTexts``) must add to it whatever else its own text
    /// depends on.
    package struct TextShape: Hashable, Sendable {
        var queries: [VelocityQuery]
        var card: Bool
        var device: Bool
        var customer: Bool

        var recent: [RecentPushes]

        package init(_ batch: VelocityBatch, recent: [RecentPushes] = []) {
            queries = batch.queries
            card = batch.subject.cardID != nil
            device = batch.subject.deviceID != nil
            customer = batch.subject.customerID != nil
            self.recent = recent
        }
    }

    /// True when no query can be asked (every subject key it needs is missing).
    package var isEmpty: Bool { groups.isEmpty }

    /// Appends `, (SELECT ARRAY[…]::text[] FROM …) AS velocity<n>` for every group.
    package func appendSelectList(into sql: inout PostgresQuery.StringInterpolation) {
        for (number, group) in groups.enumerated() {
            sql.appendLiteral(", (SELECT ARRAY[")
            // The scan reaches back to the widest window; a rate-limit count lifts its upper bound.
            let widest = max(
                Double(group.members.map { batch.queries[$0].windowSeconds }.max() ?? 0),
                group.recent.map { recent[$0].windowSeconds }.max() ?? 0)
            let bounded = group.recent.isEmpty
            let time = Self.timeColumn(group.source)
            for (position, index) in group.members.enumerated() {
                let query = batch.queries[index]
                if position > 0 { sql.appendLiteral(", ") }
                sql.appendText(Self.aggregate(query.metric))
                // Only the rows of this query: its kinds of failure, its narrower window, and
                // (the scan unbounded) the decision time.
                var conditions = Conditions()
                if let kinds = Self.kinds(query.metric) {
                    conditions.next(&sql)
                    sql.appendText("kind IN \(kinds)")
                }
                if Double(query.windowSeconds) < widest {
                    conditions.next(&sql)
                    sql.appendText("\(time) >= ")
                    sql.appendInterpolation(batch.time.addingTimeInterval(-Double(query.windowSeconds)))
                }
                if !bounded {
                    conditions.next(&sql)
                    sql.appendText("\(time) < ")
                    sql.appendInterpolation(batch.time)
                }
                conditions.end(&sql)
            }
            for (position, index) in group.recent.enumerated() {
                if position > 0 || !group.members.isEmpty { sql.appendLiteral(", ") }
                sql.appendLiteral(
                    "count(*) FILTER (WHERE channel IN ('in_app', 'wallet_extension', 'google_pay', 'samsung_pay')")
                if recent[index].windowSeconds < widest {
                    sql.appendText(" AND \(time) >= ")
                    sql.appendInterpolation(batch.time.addingTimeInterval(-recent[index].windowSeconds))
                }
                sql.appendLiteral(")")
            }
            sql.appendText("]::text[] FROM \(Self.from(group.source, key: group.key)) = ")
            switch group.subject {
            case .id(let id): sql.appendInterpolation(id)
            case .column(let column): sql.appendText(column)
            }
            sql.appendText(" AND \(time) >= ")
            sql.appendInterpolation(batch.time.addingTimeInterval(-widest))
            if bounded {
                sql.appendText(" AND \(time) < ")
                sql.appendInterpolation(batch.time)
            }
            sql.appendText(") AS velocity\(number)")
        }
    }

    /// Writes ` FILTER (WHERE a AND b …)` around the conditions a query needs, nothing if none.
    private struct Conditions {
        private var count = 0
        mutating func next(_ sql: inout PostgresQuery.StringInterpolation) {
            sql.appendLiteral(count == 0 ? " FILTER (WHERE " : " AND ")
            count += 1
        }
        func end(_ sql: inout PostgresQuery.StringInterpolation) {
            if count > 0 { sql.appendLiteral(")") }
        }
    }

    /// The counts of each group's array, checked.
    ///
    /// Read straight from the array's text (`{3,0,12}`) when it is that plain; anything else
    /// goes through the general `[String]` decoding, which gives every error.
    private func counts(of number: Int, in row: PostgresRow) throws -> [Int] {
        let group = groups[number]
        let column = try row.index(of: "velocity\(number)")
        if !row.isBinary,
            let counts = try row.withBytes(column, { $0.flatMap(PostgresArrayLiteral.plainCounts) }),
            counts.count == group.members.count + group.recent.count
        {
            return counts
        }
        let texts = try row.decode(column, as: [String].self)
        guard texts.count == group.members.count + group.recent.count else {
            throw PostgresError(
                code: .decoding,
                message:
                    "velocity\(number) has \(texts.count) values, expected \(group.members.count + group.recent.count)")
        }
        return try texts.map { text in
            guard let count = Int(text) else {
                throw PostgresError(code: .decoding, message: "velocity\(number) holds a value that is not a count")
            }
            return count
        }
    }

    /// The batch's values from a row holding the `velocity<n>` columns; nil (unknown) for the
    /// queries not asked.
    package func values(in row: PostgresRow) throws -> [Int?] {
        var values = [Int?](repeating: nil, count: batch.queries.count)
        for number in groups.indices where !groups[number].members.isEmpty {
            for (index, count) in zip(groups[number].members, try counts(of: number, in: row)) {
                values[index] = count
            }
        }
        return values
    }

    /// The rate-limit counts, in the order given to ``init(_:keyColumns:recent:)``; nil for a
    /// count whose key the subject lacked.
    package func recentPushes(in row: PostgresRow) throws -> [Int?] {
        var values = [Int?](repeating: nil, count: recent.count)
        for number in groups.indices where !groups[number].recent.isEmpty {
            let group = groups[number]
            for (index, count) in zip(group.recent, try counts(of: number, in: row).dropFirst(group.members.count)) {
                values[index] = count
            }
        }
        return values
    }

    private static func aggregate(_ metric: VelocityMetric) -> String {
        switch metric {
        case .distinctCards: "count(DISTINCT card_id)"
        case .distinctNames: "count(DISTINCT cardholder_name_hash)"
        case .attempts, .failedOTPs, .failedStepUps, .tokenDeletions: "count(*)"
        }
    }

    private static func kinds(_ metric: VelocityMetric) -> String? {
        switch metric {
        case .failedOTPs: "('wrong_code')"
        case .failedStepUps: "('locked', 'expired')"
        default: nil
        }
    }

    private static func timeColumn(_ source: Source) -> String {
        switch source {
        case .attempts: "created_at"
        case .challengeFailures: "at"
        case .tokenDeletions: "e.at"
        }
    }

    /// The `FROM` and `WHERE` of a group up to its key column, which the caller compares.
    private static func from(_ source: Source, key: VelocityKey) -> String {
        let column =
            switch key {
            case .card: "card_id"
            case .device: "device_id"
            case .customer: "customer_id"
            }
        switch source {
        case .attempts:
            return "provisioning_attempts WHERE \(column)"
        case .challengeFailures:
            return "challenge_failures WHERE kind IN ('wrong_code', 'locked', 'expired') AND \(column)"
        case .tokenDeletions:
            switch key {
            case .card: return "token_events e WHERE e.event = 'deleted' AND e.card_id"
            case .device:
                return
                    "token_events e JOIN tokens dt ON dt.token_reference = e.token_reference WHERE e.event = 'deleted' AND dt.device_id"
            case .customer:
                return
                    "token_events e JOIN cards dc ON dc.card_id = e.card_id WHERE e.event = 'deleted' AND dc.customer_id"
            }
        }
    }
}
