import Foundation
import IssuerdPostgres
import IssuerdSMPP

/// The SMS centre's message ids of each step-up SMS segment (`smpp_messages`, sql/0036) and the delivery
/// receipts that name them.
///
/// A segment's id is stored in the transaction that marks its outbox message delivered, so a
/// message the SMS centre accepted is never sent again after a restart. A receipt may arrive
/// before that transaction commits: it is stored by its id alone and joined to its challenge
/// when the id is recorded. A challenge is `delivered` when every segment's receipt says
/// DELIVRD, `undeliverable` as soon as one says UNDELIV, EXPIRED, REJECTD or DELETED.
package enum SMPPMessages {
    /// Records the ids of an accepted message's segments.
    package static func record(_ sent: StepUpSent, outboxID: Int64, connection: PostgresConnection) throws {
        for (index, id) in sent.segments.enumerated() {
            try connection.execute(
                """
                INSERT INTO smpp_messages (message_id, challenge_id, outbox_id, segment, segments, submitted_at)
                VALUES (\(id), \(sent.challengeID), \(outboxID), \(index + 1), \(sent.segments.count), now())
                ON CONFLICT (message_id) DO UPDATE SET challenge_id = EXCLUDED.challenge_id, outbox_id = EXCLUDED.outbox_id,
                    segment = EXCLUDED.segment, segments = EXCLUDED.segments, submitted_at = EXCLUDED.submitted_at
                """)
        }
        try refresh(sent.challengeID, connection: connection)
    }

    /// Records a receipt (a repeated one changes nothing).
    package static func receipt(_ receipt: SMSReceipt, connection: PostgresConnection) throws {
        let challenge = try connection.query(
            """
            INSERT INTO smpp_messages (message_id, receipt_state, receipt_at) VALUES (\(receipt.messageID), \(receipt.stat), now())
            ON CONFLICT (message_id) DO UPDATE SET receipt_state = EXCLUDED.receipt_state, receipt_at = EXCLUDED.receipt_at
            RETURNING challenge_id
            """
        ).first?.decode("challenge_id", as: UUID?.self)
        if let challenge { try refresh(challenge, connection: connection) }
    }

    /// Moves the challenge to `delivered` or `undeliverable` when its segments' receipts say so.
    private static func refresh(_ challengeID: UUID, connection: PostgresConnection) throws {
        try connection.execute(
            """
            UPDATE challenge_deliveries d SET
                state = CASE WHEN r.failed IS NOT NULL THEN 'undeliverable' ELSE 'delivered' END,
                detail = CASE WHEN r.failed IS NOT NULL THEN 'SMS centre receipt: ' || r.failed END,
                updated_at = now()
            FROM (
                SELECT count(*) FILTER (WHERE receipt_state = 'DELIVRD') AS delivered, max(segments) AS segments,
                       min(receipt_state) FILTER (WHERE receipt_state IN ('UNDELIV', 'EXPIRED', 'REJECTD', 'DELETED')) AS failed
                FROM smpp_messages WHERE challenge_id = \(challengeID)
                  AND outbox_id = (SELECT max(outbox_id) FROM smpp_messages WHERE challenge_id = \(challengeID))
            ) r
            WHERE d.challenge_id = \(challengeID) AND d.state IN ('queued', 'sent')
              AND (r.failed IS NOT NULL OR r.delivered >= r.segments)
            """)
    }
}
