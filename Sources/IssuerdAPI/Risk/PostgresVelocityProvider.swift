import Foundation
import IssuerdPostgres
import IssuerdRisk

/// Answers a request's velocity questions from PostgreSQL in one round trip: one `SELECT`
/// with a scalar subquery per query, each over its window `[t − w, t)`.
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
        var interpolation = PostgresQuery.StringInterpolation(literalCapacity: 256, interpolationCount: batch.queries.count * 3)
        interpolation.appendLiteral("SELECT ")
        let columns = Self.appendColumns(for: batch, into: &interpolation)
        guard !columns.isEmpty else { return [Int?](repeating: nil, count: batch.queries.count) }
        guard let row = try connection.query(PostgresQuery(stringInterpolation: interpolation)).first else {
            return [Int?](repeating: nil, count: batch.queries.count)
        }
        return try Self.values(in: row, columns: columns, count: batch.queries.count)
    }

    /// Appends one scalar subquery per answerable query of `batch`, named `v<index>` and
    /// separated by commas, to a select list (so a caller can fold the velocity into a larger
    /// statement); returns the indices it appended.
    static func appendColumns(for batch: VelocityBatch, into sql: inout PostgresQuery.StringInterpolation) -> [Int] {
        var columns: [Int] = []
        for (index, query) in batch.queries.enumerated() {
            guard let id = batch.subject.id(for: query.key) else { continue }
            if !columns.isEmpty { sql.appendLiteral(", ") }
            let lower = batch.time.addingTimeInterval(-Double(query.windowSeconds))
            appendSubquery(for: query, id: id, from: lower, to: batch.time, into: &sql)
            sql.appendLiteral(" AS v\(index)")
            columns.append(index)
        }
        return columns
    }

    /// The batch's values from a row holding the columns ``appendColumns(for:into:)`` wrote;
    /// nil (unknown) for the queries it skipped.
    static func values(in row: PostgresRow, columns: [Int], count: Int) throws -> [Int?] {
        var values = [Int?](repeating: nil, count: count)
        for index in columns {
            values[index] = try row.decode("v\(index)", as: Int.self)
        }
        return values
    }

    private static func appendSubquery(
        for query: VelocityQuery, id: String, from lower: Date, to upper: Date, into sql: inout PostgresQuery.StringInterpolation
    ) {
        let key: String
        switch query.key {
        case .card: key = "card_id"
        case .device: key = "device_id"
        case .customer: key = "customer_id"
        }
        switch query.metric {
        case .attempts, .distinctCards, .distinctNames:
            let counted = query.metric == .attempts ? "count(*)" : query.metric == .distinctCards ? "count(DISTINCT card_id)" : "count(DISTINCT cardholder_name_hash)"
            sql.appendLiteral("(SELECT \(counted) FROM provisioning_attempts WHERE \(key) = ")
            sql.appendInterpolation(id)
            sql.appendLiteral(" AND created_at >= ")
        case .failedOTPs, .failedStepUps:
            let kinds = query.metric == .failedOTPs ? "('wrong_code')" : "('locked', 'expired')"
            sql.appendLiteral("(SELECT count(*) FROM challenge_failures WHERE kind IN \(kinds) AND \(key) = ")
            sql.appendInterpolation(id)
            sql.appendLiteral(" AND at >= ")
        case .tokenDeletions:
            switch query.key {
            case .card:
                sql.appendLiteral("(SELECT count(*) FROM token_events e WHERE e.event = 'deleted' AND e.card_id = ")
            case .device:
                sql.appendLiteral(
                    "(SELECT count(*) FROM token_events e JOIN tokens t ON t.token_reference = e.token_reference WHERE e.event = 'deleted' AND t.device_id = ")
            case .customer:
                sql.appendLiteral(
                    "(SELECT count(*) FROM token_events e JOIN cards c ON c.card_id = e.card_id WHERE e.event = 'deleted' AND c.customer_id = ")
            }
            sql.appendInterpolation(id)
            sql.appendLiteral(" AND e.at >= ")
        }
        sql.appendInterpolation(lower)
        sql.appendLiteral(query.metric.eventKind == .attempt ? " AND created_at < " : query.metric == .tokenDeletions ? " AND e.at < " : " AND at < ")
        sql.appendInterpolation(upper)
        sql.appendLiteral(")")
    }
}
