import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage

/// Everything a TSP authorization reads from PostgreSQL, fetched by one statement once the
/// token reference's lock is held: the answer already given to this `requestId` and
/// `tokenReference`, whether another request recorded the token reference, the card with the
/// PAN's keyed fingerprint and its owner, the card's active tokens, the ruleset's velocity
/// values, and the pending yellow push of that card on that device.
///
/// The card is found by the statement itself, so the velocity subqueries and the push look-up
/// take the card and the customer from the joined row (``VelocitySQL``'s key columns); the
/// device comes from the request. The statement always returns one row: without a card, its
/// columns are NULL.
struct TokenizationContext {
    /// The stored answer of an earlier authorization of this `requestId` and `tokenReference`.
    var storedAnswer: JSONValue?
    /// Whether the token reference is already recorded (by another request).
    var tokenTaken: Bool
    /// The card with this PAN, nil when none.
    var card: CardRecord?
    var customer: CustomerRecord?
    var cardActiveTokens: Int
    /// The answers to the velocity batch the statement was built for (meaningful with a card).
    var velocity: [Int?]
    /// The newest yellow push of the card on this device (or sent without a device id) in the
    /// window that no TSP authorization of that card and device followed yet.
    var pendingPush: (attemptID: UUID, allowedMethods: [String])?

    /// Run first in the transaction: the token reference's advisory lock, held to the end of the
    /// transaction, and the context statement's plan settings (``PushContext/lockAndPlanSettings(key:)``).
    ///
    /// Locking the token reference (not only the `requestId` and `tokenReference` pair) serialises
    /// a retry with its original and any other request for the same token reference, so the
    /// context statement, whose snapshot is taken once the lock is held, sees what they committed.
    static func lockAndPlanSettings(tokenReference: String) -> [PostgresQuery] {
        PushContext.lockAndPlanSettings(key: "tsp:" + tokenReference)
    }

    /// The statement, and what ``init(rows:statement:)`` needs to read its velocity columns; its
    /// result is the context.
    struct Statement: PostgresStatement {
        var query: PostgresQuery
        var velocity: VelocitySQL

        func result(from rows: PostgresRows) throws -> TokenizationContext {
            try TokenizationContext(rows: rows, statement: self)
        }
    }

    /// The statement for a request's pair, card fingerprint and device, asking `velocity` (for
    /// the card and customer the statement finds; its subject's card and customer are ignored)
    /// and looking for a yellow push since `pushesSince`.
    ///
    /// The text depends only on the velocity queries and which subject keys are known (the
    /// device id itself is a binding either way), so it is written once per shape and kept, as
    /// the push context's is (``PushContext/statement(cardID:customerID:velocity:customerWindow:cardWindow:now:)``).
    static func statement(
        requestID: String, tokenReference: String, fingerprint: [UInt8], deviceID: String?, velocity: VelocityBatch,
        pushesSince: Date
    ) -> Statement {
        let velocitySQL = VelocitySQL(velocity, keyColumns: [.card: "c.card_id", .customer: "c.customer_id"])
        let query = texts.query(
            VelocitySQL.TextShape(velocity), literalCapacity: 4096, interpolations: 8 + velocity.queries.count * 3
        ) { sql in
            sql.appendLiteral(
                "SELECT (SELECT p.facts -> 'response' FROM provisioning_attempts p WHERE p.channel = 'tsp' AND p.request_id = "
            )
            sql.appendInterpolation(requestID)
            sql.appendLiteral(" AND p.token_reference = ")
            sql.appendInterpolation(tokenReference)
            sql.appendLiteral(
                " ORDER BY p.created_at LIMIT 1) AS stored_answer, EXISTS (SELECT 1 FROM tokens k WHERE k.token_reference = "
            )
            sql.appendInterpolation(tokenReference)
            sql.appendLiteral(Self.selectedColumns)
            sql.appendLiteral(
                "(SELECT count(*) FROM tokens t WHERE t.card_id = c.card_id AND t.status = 'active') AS active_tokens")
            velocitySQL.appendSelectList(into: &sql)
            sql.appendLiteral(", ")
            AttemptStore.appendPendingYellowPush(
                cardColumn: "c.card_id", deviceID: deviceID, since: pushesSince, name: "pending_push", into: &sql)
            // A reissue keeping the PAN leaves several records of it: the one in service is the card.
            sql.appendLiteral(
                " FROM (VALUES (1)) AS one (n) LEFT JOIN LATERAL (SELECT * FROM cards WHERE pan_fingerprint = ")
            sql.appendInterpolation(fingerprint)
            sql.appendLiteral(
                " ORDER BY status = 'replaced', status = 'inactive', created_at DESC LIMIT 1) c ON true"
                    + " LEFT JOIN customers cu ON cu.customer_id = c.customer_id")
        }
        return Statement(query: query, velocity: velocitySQL)
    }

    /// Texts by shape: a handful per ruleset (with and without a device id).
    private static let texts = PostgresStatementTexts<VelocitySQL.TextShape>()

    /// Forgets every kept text (tests: the next build of each shape writes it again).
    static func forgetTexts() { texts.removeAll() }

    private static let selectedColumns =
        ") AS token_taken, \(CardStore.columns(qualifiedBy: "c")), \(CustomerStore.columns(qualifiedBy: "cu", prefix: "cu_")), "

    /// The context from the statement's one row.
    init(rows: PostgresRows, statement: Statement) throws {
        guard let row = rows.first else {
            throw PostgresError(code: .decoding, message: "the TSP context statement returned no row")
        }
        storedAnswer = try row.decode("stored_answer", as: PostgresJSON?.self).map { try $0.decode(JSONValue.self) }
        tokenTaken = try row.decode("token_taken")
        guard try !row.isNull("card_id") else {
            card = nil
            customer = nil
            cardActiveTokens = 0
            velocity = []
            pendingPush = nil
            return
        }
        card = try CardStore.decode(row)
        customer = try row.isNull("cu_customer_id") ? nil : try CustomerStore.decode(row, prefix: "cu_")
        cardActiveTokens = try row.decode("active_tokens")
        velocity = try statement.velocity.values(in: row)
        if let push = try row.decode("pending_push", as: [String]?.self), let first = push.first,
            let attemptID = UUID(uuidString: first)
        {
            pendingPush = (attemptID, Array(push.dropFirst()))
        } else {
            pendingPush = nil
        }
    }
}
