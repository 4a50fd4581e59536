import Foundation
import IssuerdPostgres

/// The MDES issuer web services' own tables (sql/0021): the answers kept for MDES's retries
/// (`mdes_requests`) and the suspicious events MDES reported (`mdes_suspicious_events`).
package enum MDESStore {
    /// An answer given to one operation and `requestId`, with the SHA-256 of the body it answered.
    package struct StoredAnswer: Sendable {
        package var bodySHA256: [UInt8]
        package var status: Int
        package var answer: String

        package init(bodySHA256: [UInt8], status: Int, answer: String) {
            self.bodySHA256 = bodySHA256
            self.status = status
            self.answer = answer
        }
    }

    /// Takes the (operation, `requestId`) pair's transaction-level advisory lock, so a retry
    /// waits for its original, and returns the answer stored for the pair, if any.
    package static func lockAndFindAnswer(
        operation: String, requestId: String, connection: PostgresConnection
    ) throws -> StoredAnswer? {
        try connection.execute(answerLock(operation: operation, requestId: requestId))
        return try storedAnswer(in: connection.query(answerLookup(operation: operation, requestId: requestId)))
    }

    /// The pair's transaction-level advisory lock, for a pipeline (``lockAndFindAnswer(operation:requestId:connection:)``).
    package static func answerLock(operation: String, requestId: String) -> PostgresQuery {
        "SELECT pg_advisory_xact_lock(hashtextextended(\(lockKey(operation: operation, requestId: requestId)), 0))"
    }

    /// The advisory lock's key text: another statement taking the same key shares the lock.
    package static func lockKey(operation: String, requestId: String) -> String { "mdes:\(operation):\(requestId)" }

    /// The look-up of the pair's stored answer, read by ``storedAnswer(in:)``.
    package static func answerLookup(operation: String, requestId: String) -> PostgresQuery {
        "SELECT body_sha256, status, answer FROM mdes_requests WHERE operation = \(operation) AND request_id = \(requestId)"
    }

    /// The stored answer in ``answerLookup(operation:requestId:)``'s rows, if any.
    package static func storedAnswer(in rows: PostgresRows) throws -> StoredAnswer? {
        try rows.first.map {
            StoredAnswer(
                bodySHA256: try $0.decode("body_sha256"), status: try $0.decode("status"),
                answer: try $0.decode("answer"))
        }
    }

    /// Stores the pair's answer; now and then (one call in 200) also prunes up to a thousand
    /// answers older than `keptSince`, so the table needs no job of its own.
    package static func storeAnswer(
        operation: String, requestId: String, _ stored: StoredAnswer, now: Date, keptSince: Date,
        connection: PostgresConnection
    ) throws {
        for statement in answerStorage(
            operation: operation, requestId: requestId, stored, now: now, keptSince: keptSince)
        {
            try connection.execute(statement)
        }
    }

    /// ``storeAnswer(operation:requestId:_:now:keptSince:connection:)``'s statements, to send
    /// with a pipelined transaction's `COMMIT`.
    package static func answerStorage(
        operation: String, requestId: String, _ stored: StoredAnswer, now: Date, keptSince: Date
    ) -> [PostgresQuery] {
        let insertion: PostgresQuery = """
            INSERT INTO mdes_requests (operation, request_id, body_sha256, status, answer, created_at)
            VALUES (\(operation), \(requestId), \(stored.bodySHA256), \(stored.status), \(stored.answer), \(now))
            """
        guard Int.random(in: 0..<200) == 0 else { return [insertion] }
        return [
            insertion,
            """
            DELETE FROM mdes_requests WHERE ctid IN (
                SELECT ctid FROM mdes_requests WHERE created_at < \(keptSince) LIMIT 1000)
            """,
        ]
    }

    /// Records one Notify Suspicious Events call (`events` as JSON text), with the token's card
    /// when issuerd knows the token.
    package static func recordSuspiciousEvents(
        requestId: String, tokenReference: String, status: String, paymentAppInstanceId: String?, eventsJSON: String,
        now: Date, connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            INSERT INTO mdes_suspicious_events (request_id, token_reference, card_id, status, payment_app_instance_id, events, received_at)
            VALUES (\(requestId), \(tokenReference), (SELECT card_id FROM tokens WHERE token_reference = \(tokenReference)),
                    \(status), \(paymentAppInstanceId), \(PostgresJSON(rawJSON: eventsJSON)), \(now))
            """)
    }

    /// The newest `limit` suspicious events (of one token when given), each as a JSON object's text.
    package static func suspiciousEvents(
        tokenReference: String?, limit: Int, connection: PostgresConnection
    ) throws -> [String] {
        try connection.query(
            """
            SELECT json_build_object('id', id, 'requestId', request_id, 'tokenReference', token_reference,
                     'cardId', card_id, 'status', status, 'paymentAppInstanceId', payment_app_instance_id,
                     'events', events, 'receivedAt', to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))::text AS event
            FROM mdes_suspicious_events
            WHERE \(tokenReference)::text IS NULL OR token_reference = \(tokenReference)
            ORDER BY received_at DESC, id DESC LIMIT \(limit)
            """
        ).map { try $0.decode("event", as: String.self) }
    }
}
