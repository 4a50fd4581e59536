import Foundation
import IssuerdPostgres
import IssuerdRisk

/// Everything an in-app or Wallet-extension push decision reads from PostgreSQL, fetched by
/// one statement: the card (only if the customer owns it), its owner, its active tokens, both
/// rate-limit windows and the ruleset's velocity values.
///
/// One statement instead of one per fact: on the provisioning benchmark the round trips, not
/// the statements' execution, were most of the database's CPU (docs/performance.md).
struct PushContext {
    var card: CardRecord
    var customer: CustomerRecord?
    var cardActiveTokens: Int
    /// Pushes of the customer in the customer rate-limit window, and the oldest.
    var customerRecent: (count: Int, oldest: Date?)
    /// Pushes of the card in the card rate-limit window, and the oldest.
    var cardRecent: (count: Int, oldest: Date?)
    /// The answers to the velocity batch the statement was built for.
    var velocity: [Int?]

    /// The statement, and what ``init(rows:statement:)`` needs to read its velocity columns.
    struct Statement {
        var query: PostgresQuery
        var velocity: VelocitySQL
    }

    /// The statement for `cardID` of `customerID`, asking `velocity` (whose subject must be
    /// that card and customer) and counting pushes in each rate-limit window before `now`.
    static func statement(
        cardID: String, customerID: String, velocity: VelocityBatch, customerWindow: TimeInterval, cardWindow: TimeInterval, now: Date
    ) -> Statement {
        var sql = PostgresQuery.StringInterpolation(literalCapacity: 2048, interpolationCount: 8 + velocity.queries.count * 3)
        sql.appendLiteral("SELECT \(CardStore.columns(qualifiedBy: "c")), \(CustomerStore.columns(qualifiedBy: "cu", prefix: "cu_")), ")
        sql.appendLiteral("rc_n, rc_oldest, rk_n, rk_oldest, ")
        sql.appendLiteral("(SELECT count(*) FROM tokens t WHERE t.card_id = c.card_id AND t.status = 'active') AS active_tokens")
        let velocitySQL = VelocitySQL(velocity)
        velocitySQL.appendSelectList(into: &sql)
        sql.appendLiteral(" FROM cards c LEFT JOIN customers cu ON cu.customer_id = c.customer_id CROSS JOIN ")
        AttemptStore.appendRecentPushes(
            column: .customer, id: customerID, since: now.addingTimeInterval(-customerWindow), now: now, alias: "rc", into: &sql)
        sql.appendLiteral(" CROSS JOIN ")
        AttemptStore.appendRecentPushes(
            column: .card, id: cardID, since: now.addingTimeInterval(-cardWindow), now: now, alias: "rk", into: &sql)
        velocitySQL.appendJoins(into: &sql)
        sql.appendLiteral(" WHERE c.card_id = ")
        sql.appendInterpolation(cardID)
        sql.appendLiteral(" AND c.customer_id = ")
        sql.appendInterpolation(customerID)
        return Statement(query: PostgresQuery(stringInterpolation: sql), velocity: velocitySQL)
    }

    /// The context from the statement's row; nil (no row) when the card is not the customer's.
    init?(rows: PostgresRows, statement: Statement) throws {
        guard let row = rows.first else { return nil }
        card = try CardStore.decode(row)
        customer = row.isNull(row.columns.firstIndex(of: "cu_customer_id") ?? -1) ? nil : try CustomerStore.decode(row, prefix: "cu_")
        cardActiveTokens = try row.decode("active_tokens")
        customerRecent = (try row.decode("rc_n"), try row.decode("rc_oldest"))
        cardRecent = (try row.decode("rk_n"), try row.decode("rk_oldest"))
        velocity = try statement.velocity.values(in: row)
    }
}
