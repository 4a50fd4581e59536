import Foundation
import IssuerdPostgres

/// A challenge's delivery state (sql/0034): `queued` when its code is written to the outbox,
/// `sent` when a provider took the message, `delivered` or `undeliverable` when the provider
/// says so later or the outbox gives up. A state only moves forward: a late `sent` never
/// overwrites `delivered` (a receipt may arrive before the dispatcher records the acceptance).
package enum StepUpDeliveryState {
    /// Records the provider's acceptance.
    package static func sent(_ sent: StepUpSent, connection: PostgresConnection) throws {
        try connection.execute(
            """
            UPDATE challenges SET delivery_state = 'sent', delivery_provider = \(sent.provider),
                   delivery_message_id = \(sent.messageID), delivery_detail = NULL, delivery_updated_at = now()
            WHERE challenge_id = \(sent.challengeID) AND delivery_state IN ('queued', 'sent', 'undeliverable')
            """)
    }

    /// Records that the message will not arrive; `detail` is safe to show (no code, no destination).
    package static func undeliverable(
        challengeID: UUID, provider: String, detail: String, connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            UPDATE challenges SET delivery_state = 'undeliverable', delivery_provider = \(provider),
                   delivery_detail = \(String(detail.prefix(300))), delivery_updated_at = now()
            WHERE challenge_id = \(challengeID) AND delivery_state IN ('queued', 'sent')
            """)
    }
}
