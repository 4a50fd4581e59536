import Foundation
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage

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
    /// Pushes of the customer in the customer rate-limit window (none before it, any after `now`).
    var customerRecent: Int
    /// Pushes of the card in the card rate-limit window.
    var cardRecent: Int
    /// The answers to the velocity batch the statement was built for.
    var velocity: [Int?]

    /// Run first in the transaction: two settings for the context statement that follows, and
    /// the customer's advisory lock, held to the end of the transaction.
    ///
    /// The statement keeps one generic plan per connection instead of being planned for every
    /// request (planning cost more than running it), and that plan is made with sequential and
    /// bitmap scans off: every look-up in the statement is a B-tree range by design, and a plan
    /// made while a table is still small (or has no statistics yet) cannot settle on scanning
    /// it whole, or through the BRIN index on `created_at`, later. The settings end with the
    /// transaction; PostgreSQL re-plans when autovacuum refreshes a table's statistics.
    static func lockAndPlanSettings(customerID: String) -> [PostgresQuery] {
        lockAndPlanSettings(key: "provision:" + customerID)
    }

    /// The same for a context statement locked by another `key` (the TSP authorization's token
    /// reference, ``TokenizationContext``). The settings also give the transaction's later
    /// statements generic plans, among them the foreign-key checks of its inserts, which the
    /// connection's `force_custom_plan` would plan anew for every row.
    ///
    /// Two statements: the settings take no parameter, so even under the connection's
    /// `force_custom_plan` their plan is made once; the lock, which does, is then planned under
    /// the settings' `force_generic_plan`, also once. In one statement it was planned for every
    /// request (18 µs, more than it took to run).
    static func lockAndPlanSettings(key: String) -> [PostgresQuery] {
        [planSettings, "SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))"]
    }

    /// The settings alone, for the rest of the transaction: a context statement run without
    /// them (MDES Authorize Service's, before they were added) was planned for every request
    /// with the BRIN index's bitmap scans, 122 ms of PostgreSQL per request (docs/performance.md).
    static let planSettings: PostgresQuery = """
        SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true),
               set_config('enable_bitmapscan', 'off', true)
        """

    /// The statement, and what ``init(rows:statement:)`` needs to read its velocity columns; its
    /// result is the context, nil when the card is not the customer's.
    struct Statement: PostgresStatement {
        var query: PostgresQuery
        var velocity: VelocitySQL

        func result(from rows: PostgresRows) throws -> PushContext? { try PushContext(rows: rows, statement: self) }
    }

    /// The statement for `cardID` of `customerID`, asking `velocity`'s queries about that card,
    /// that customer and `velocity`'s device, and counting their pushes in each rate-limit window
    /// from `now` on (folded into the velocity subqueries of the card and the customer).
    ///
    /// The text depends only on the velocity queries, which subject keys are known and the
    /// rate-limit windows, so it is written once per shape and kept (``texts``); each request
    /// builds only its bindings, through the same code (building the 3 KB text was 3–4 % of a
    /// request's CPU).
    static func statement(
        cardID: String, customerID: String, velocity: VelocityBatch, customerWindow: TimeInterval,
        cardWindow: TimeInterval, now: Date
    ) -> Statement {
        let recent = [
            VelocitySQL.RecentPushes(key: .customer, windowSeconds: customerWindow),
            .init(key: .card, windowSeconds: cardWindow),
        ]
        let subject = VelocitySubject(cardID: cardID, deviceID: velocity.subject.deviceID, customerID: customerID)
        let batch = VelocityBatch(subject: subject, time: now, queries: velocity.queries)
        let velocitySQL = VelocitySQL(batch, recent: recent)
        let query = texts.query(
            VelocitySQL.TextShape(batch, recent: recent), literalCapacity: 2048,
            interpolations: 8 + batch.queries.count * 3
        ) { sql in
            appendStatement(cardID: cardID, customerID: customerID, velocitySQL: velocitySQL, into: &sql)
        }
        return Statement(query: query, velocity: velocitySQL)
    }

    /// Texts by shape: a handful per ruleset (with and without a device id).
    private static let texts = PostgresStatementTexts<VelocitySQL.TextShape>()

    /// Forgets every kept text (tests: the next build of each shape writes it again).
    static func forgetTexts() { texts.removeAll() }

    private static let selectedColumns =
        "SELECT \(CardStore.columns(qualifiedBy: "c")), \(CustomerStore.columns(qualifiedBy: "cu", prefix: "cu_")), "

    private static func appendStatement(
        cardID: String, customerID: String, velocitySQL: VelocitySQL, into sql: inout PostgresQuery.StringInterpolation
    ) {
        sql.appendLiteral(selectedColumns)
        sql.appendLiteral(
            "(SELECT count(*) FROM tokens t WHERE t.card_id = c.card_id AND t.status = 'active') AS active_tokens")
        velocitySQL.appendSelectList(into: &sql)
        sql.appendLiteral(" FROM cards c LEFT JOIN customers cu ON cu.customer_id = c.customer_id")
        sql.appendLiteral(" WHERE c.card_id = ")
        sql.appendInterpolation(cardID)
        sql.appendLiteral(" AND c.customer_id = ")
        sql.appendInterpolation(customerID)
    }

    /// The context from the statement's row; nil (no row) when the card is not the customer's.
    init?(rows: PostgresRows, statement: Statement) throws {
        guard let row = rows.first else { return nil }
        card = try CardStore.decode(row)
        customer = try row.isNull("cu_customer_id") ? nil : try CustomerStore.decode(row, prefix: "cu_")
        cardActiveTokens = try row.decode("active_tokens")
        let recent = try statement.velocity.recentPushes(in: row)
        guard recent.count == 2, let customerRecent = recent[0], let cardRecent = recent[1] else {
            throw PostgresError(code: .decoding, message: "the context statement returned no rate-limit counts")
        }
        self.customerRecent = customerRecent
        self.cardRecent = cardRecent
        velocity = try statement.velocity.values(in: row)
    }
}
