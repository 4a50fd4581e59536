import Foundation
import IssuerdPostgres

/// A token's lifecycle state in `tokens`.
enum TokenStatusValue: String, Sendable, CaseIterable {
    case pendingVerification = "pending_verification"
    case active, suspended, deleted
}

/// A lifecycle event of `token_events`, as the TSP reports it.
enum TokenEventKind: String, Sendable, CaseIterable {
    case created, activated, suspended, resumed, deleted

    /// The status a token takes after the event, from `current`; nil when it keeps its status.
    ///
    /// `created` changes nothing (the authorization already created the row); `deleted` is
    /// final; `resumed` only undoes a suspension.
    func status(after current: TokenStatusValue) -> TokenStatusValue? {
        switch self {
        case .created: nil
        case .activated: .active
        case .suspended: .suspended
        case .resumed: current == .suspended ? .active : nil
        case .deleted: .deleted
        }
    }
}

/// Reads and writes `tokens` and `token_events`.
enum TokenStore {
    /// Creates a token; false when the token reference exists already.
    static func insert(
        tokenReference: String, cardID: String, deviceID: String?, tokenRequestorID: String?, status: TokenStatusValue,
        attemptID: UUID, now: Date, connection: PostgresConnection
    ) throws -> Bool {
        try connection.execute(
            """
            INSERT INTO tokens (token_reference, card_id, device_id, token_requestor_id, status, attempt_id, created_at, updated_at)
            VALUES (\(tokenReference), \(cardID), \(deviceID), \(tokenRequestorID), \(status.rawValue), \(attemptID), \(now), \(now))
            ON CONFLICT (token_reference) DO NOTHING
            """) == 1
    }

    /// The token's card and status, locked for update.
    static func lock(_ tokenReference: String, connection: PostgresConnection) throws -> (cardID: String, status: TokenStatusValue)? {
        guard let row = try connection.query(
            "SELECT card_id, status FROM tokens WHERE token_reference = \(tokenReference) FOR UPDATE"
        ).first, let status = TokenStatusValue(rawValue: try row.decode("status")) else { return nil }
        return (try row.decode("card_id"), status)
    }

    static func setStatus(_ tokenReference: String, to status: TokenStatusValue, now: Date, connection: PostgresConnection) throws {
        try connection.execute("UPDATE tokens SET status = \(status.rawValue), updated_at = \(now) WHERE token_reference = \(tokenReference)")
    }

    /// Appends to the token's history (and to the `token_deletions` velocity when `deleted`).
    static func recordEvent(
        _ event: TokenEventKind, tokenReference: String, cardID: String?, source: String, at time: Date, now: Date,
        connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            INSERT INTO token_events (token_reference, card_id, event, source, at, recorded_at)
            VALUES (\(tokenReference), \(cardID), \(event.rawValue), \(source), \(time), \(now))
            """)
    }
}
