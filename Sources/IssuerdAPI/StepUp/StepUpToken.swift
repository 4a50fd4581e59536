import Foundation
import IssuerdOutbox
import IssuerdPostgres
import IssuerdStorage

/// A token awaiting (or past) step-up, with what the step-up needs from its card, customer and
/// provisioning attempt, read under a row lock on the token.
///
/// Locking the token row serialises every step-up on one token across instances: two sends
/// cannot both pass the hourly limit, and two verifications of one code cannot both succeed.
struct StepUpToken: Sendable {
    var tokenReference: String
    var cardID: String
    var customerID: String
    var status: String
    /// The methods the risk decision allowed; nil when the token has no recorded attempt.
    var allowedMethods: [String]?
    /// The device locale recorded with the attempt, if any.
    var deviceLocale: String?
    /// The token service it is managed through: `tsp` or `mdes` (sql/0020).
    var service: String = "tsp"

    static let awaitingVerification = "pending_verification"

    private static let select = """
        SELECT t.token_reference, t.card_id, c.customer_id, t.status, a.allowed_methods,
               a.inputs ->> 'device.locale' AS device_locale, t.service
        FROM tokens t JOIN cards c ON c.card_id = t.card_id
        LEFT JOIN provisioning_attempts a ON a.attempt_id = t.attempt_id
        """

    /// The token by reference, locked for the caller's transaction.
    static func lock(_ tokenReference: String, connection: PostgresConnection) throws -> StepUpToken? {
        try connection.query("\(unsafeSQL: select) WHERE t.token_reference = \(tokenReference) FOR UPDATE OF t").first
            .map(decode)
    }

    /// The caller's token by reference or by pass serial number (and pass type), locked.
    static func lock(
        customerID: String, tokenReference: String?, serialNumber: String?, passTypeIdentifier: String?,
        connection: PostgresConnection
    ) throws -> StepUpToken? {
        if let tokenReference {
            return try connection.query(
                "\(unsafeSQL: select) WHERE t.token_reference = \(tokenReference) AND c.customer_id = \(customerID) FOR UPDATE OF t"
            ).first.map(decode)
        }
        return try connection.query(
            """
            \(unsafeSQL: select)
            WHERE t.serial_number = \(serialNumber) AND c.customer_id = \(customerID)
              AND (\(passTypeIdentifier)::text IS NULL OR t.pass_type_identifier = \(passTypeIdentifier))
            ORDER BY t.created_at DESC LIMIT 1 FOR UPDATE OF t
            """
        ).first.map(decode)
    }

    /// Marks the token active and records the event (inside the caller's transaction).
    static func activate(_ tokenReference: String, cardID: String, now: Date, connection: PostgresConnection) throws {
        try TokenStore.setStatus(tokenReference, to: .active, now: now, connection: connection)
        try TokenStore.recordEvent(
            .activated, tokenReference: tokenReference, cardID: cardID, source: "issuer", at: now, now: now,
            connection: connection)
    }

    private static func decode(_ row: PostgresRow) throws -> StepUpToken {
        StepUpToken(
            tokenReference: try row.decode("token_reference"), cardID: try row.decode("card_id"),
            customerID: try row.decode("customer_id"),
            status: try row.decode("status"), allowedMethods: try row.decode("allowed_methods", as: [String]?.self),
            deviceLocale: try row.decode("device_locale"), service: try row.decode("service"))
    }

    /// Queues the activation at the token's service, inside the caller's transaction: a `tsp`
    /// notification, or for a Mastercard token (`service = 'mdes'`) a Customer Service API
    /// `activate` with `mdesChange`'s reason code.
    ///
    /// - Parameters:
    ///   - occurrence: What makes this activation unique (a challenge id); part of the dedup key.
    func queueActivation(
        reason: String, mdesChange: MDESTokenChange, occurrence: String, connection: PostgresConnection
    ) throws {
        if service == "mdes" {
            try MDESCustomerServicePayload.enqueue(
                tokenReference: tokenReference, change: mdesChange, cardID: cardID, occurrence: occurrence,
                connection: connection)
        } else {
            try OutboxStore.enqueue(
                kind: .tsp, dedupKey: "tsp:activate:\(tokenReference):\(occurrence)",
                payload: TSPNotificationPayload(
                    tokenReference: tokenReference, action: "activate", reason: reason, cardId: cardID),
                connection: connection)
        }
    }
}
