import Foundation
import IssuerdPostgres

/// A challenge's delivery state (`challenge_deliveries`, sql/0036): `queued` when its code is
/// written to the outbox, `sent` when a provider took the message, `delivered` or
/// `undeliverable` when the provider says so later or the outbox gives up. A state only moves
/// forward: a late `sent` never overwrites `delivered` (a receipt may be recorded before the
/// dispatcher records the acceptance).
package enum StepUpDeliveryState {
    /// Records that the challenge's code is in the outbox (in the transaction that puts it there).
    package static func queued(_ challengeID: UUID, connection: PostgresConnection) throws {
        try connection.execute(
            """
            INSERT INTO challenge_deliveries (challenge_id, state) VALUES (\(challengeID), 'queued')
            ON CONFLICT (challenge_id) DO NOTHING
            """)
    }

    /// Records the provider's acceptance.
    package static func sent(_ sent: StepUpSent, connection: PostgresConnection) throws {
        try connection.execute(
            """
            INSERT INTO challenge_deliveries AS d (challenge_id, state, provider, message_id)
            VALUES (\(sent.challengeID), 'sent', \(sent.provider), \(sent.messageID))
            ON CONFLICT (challenge_id) DO UPDATE SET state = 'sent', provider = EXCLUDED.provider,
                message_id = EXCLUDED.message_id, detail = NULL, updated_at = now()
            WHERE d.state IN ('queued', 'sent', 'undeliverable')
            """)
    }

    /// Records that the message will not arrive; `detail` is safe to show (no code, no destination).
    package static func undeliverable(
        challengeID: UUID, provider: String, detail: String, connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            INSERT INTO challenge_deliveries AS d (challenge_id, state, provider, detail)
            VALUES (\(challengeID), 'undeliverable', \(provider), \(String(detail.prefix(300))))
            ON CONFLICT (challenge_id) DO UPDATE SET state = 'undeliverable', provider = EXCLUDED.provider,
                detail = EXCLUDED.detail, updated_at = now()
            WHERE d.state IN ('queued', 'sent')
            """)
    }
}
