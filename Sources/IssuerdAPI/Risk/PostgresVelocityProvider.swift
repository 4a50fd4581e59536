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
struct PostgresVelocityProvider: VelocityProvider, @unchecked Sendable {
    // @unchecked: the connection is not Sendable, but a provider lives only for one synchronous
    // `Ruleset.evaluate` call on the thread that checked the connection out.
    let connection: PostgresConnection

    func values(for batch: VelocityBatch) throws -> [Int?] {
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
struct VelocitySQL {
    private let batch: VelocityBatch
    private let groups: [Group]

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
    }

    /// The SQL for `batch`; a key in `keyColumns` is read from that column of the enclosing
    /// query instead of the batch subject's id (so it is asked even when the subject has none).
    init(_ batch: VelocityBatch, keyColumns: [VelocityKey: String] = [:]) {
        self.batch = batch
        var groups: [Group] = []
        for (index, query) in batch.queries.enumerated() {
            let subject: Subject
            if let column = keyColumns[query.key] {
                subject = .column(column)
            } else if let id = batch.subject.id(for: query.key) {
                subject = .id(id)
            } else {
                continue
            }
            let source = Source(query.metric)
            if let existing = groups.firstIndex(where: { $0.source == source && $0.key == query.key }) {
                groups[existing].members.append(index)
            } else {
                groups.append(Group(source: source, key: query.key, subject: subject, members: [index]))
            }
        }
        self.groups = groups
    }

    /// What a statement asking a batch writes as text, beside its values: the queries, and
    /// which subject keys are known (a query whose key is missing is left out). A statement
    /// kept by this shape (``PostgresStatementTexts``) must add to it whatever else its own text
    /// depends on.
    struct TextShape: Hashable, Sendable {
        var queries: [VelocityQuery]
        var card: Bool
        var device: Bool
        var customer: Bool

        init(_ batch: VelocityBatch) {
            queries = batch.queries
            card = batch.subject.cardID != nil
            device = batch.subject.deviceID != nil
            customer = batch.subject.customerID != nil
        }
    }

    /// True when no query can be asked (every subject key it needs is missing).
    var isEmpty: Bool { groups.isEmpty }

    /// Appends `, (SELECT ARRAY[…]::text[] FROM …) AS velocity<n>` for every group.
    func appendSelectList(into sql: inout PostgresQuery.StringInterpolation) {
        for (number, group) in groups.enumerated() {
            sql.appendLiteral(", (SELECT ARRAY[")
            let widest = group.members.map { batch.queries[$0].windowSeconds }.max() ?? 0
            let time = Self.timeColumn(group.source)
            for (position, index) in group.members.enumerated() {
                let query = batch.queries[index]
                if position > 0 { sql.appendLiteral(", ") }
                sql.appendText(Self.aggregate(query.metric))
                // Only the rows of this query: its kinds of failure, and its narrower window.
                let kinds = Self.kinds(query.metric)
                let narrower = query.windowSeconds < widest
                guard kinds != nil || narrower else { continue }
                sql.appendLiteral(" FILTER (WHERE ")
                if let kinds { sql.appendText("kind IN \(kinds)" + (narrower ? " AND " : "")) }
                if narrower {
                    sql.appendText("\(time) >= ")
                    sql.appendInterpolation(batch.time.addingTimeInterval(-Double(query.windowSeconds)))
                }
                sql.appendLiteral(")")
            }
            sql.appendText("]::text[] FROM \(Self.from(group.source, key: group.key)) = ")
            switch group.subject {
            case .id(let id): sql.appendInterpolation(id)
            case .column(let column): sql.appendText(column)
            }
            sql.appendText(" AND \(time) >= ")
            sql.appendInterpolation(batch.time.addingTimeInterval(-Double(widest)))
            sql.appendText(" AND \(time) < ")
            sql.appendInterpolation(batch.time)
            sql.appendText(") AS velocity\(number)")
        }
    }

    /// The batch's values from a row holding the `velocity<n>` columns; nil (unknown) for the
    /// queries not asked.
    func values(in row: PostgresRow) throws -> [Int?] {
        var values = [Int?](repeating: nil, count: batch.queries.count)
        for (number, group) in groups.enumerated() {
            let counts = try row.decode("velocity\(number)", as: [String].self)
            guard counts.count == group.members.count else {
                throw PostgresError(code: .decoding, message: "velocity\(number) has \(counts.count) values, expected \(group.members.count)")
            }
            for (index, text) in zip(group.members, counts) {
                guard let count = Int(text) else {
                    throw PostgresError(code: .decoding, message: "velocity\(number) holds a value that is not a count")
                }
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
        let column = switch key {
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
            case .device: return "token_events e JOIN tokens dt ON dt.token_reference = e.token_reference WHERE e.event = 'deleted' AND dt.device_id"
            case .customer: return "token_events e JOIN cards dc ON dc.card_id = e.card_id WHERE e.event = 'deleted' AND dc.customer_id"
            }
        }
    }
}
