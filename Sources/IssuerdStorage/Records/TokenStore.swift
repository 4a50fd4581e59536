import Foundation
import IssuerdCore
import IssuerdPostgres

/// A token's lifecycle state in `tokens`.
package enum TokenStatusValue: String, Sendable, CaseIterable {
    case pendingVerification = "pending_verification"
    case active, suspended, deleted
}

/// A lifecycle event of `token_events`, as the TSP reports it.
package enum TokenEventKind: String, Sendable, CaseIterable {
    case created, activated, suspended, resumed, deleted

    /// The status a token takes after the event, from `current`; nil when it keeps its status.
    ///
    /// `created` changes nothing (the authorization already created the row); `deleted` is
    /// final; `resumed` only undoes a suspension.
    package func status(after current: TokenStatusValue) -> TokenStatusValue? {
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
package enum TokenStore {
    /// The statement creating a token, for a caller that sends it in a pipeline with `COMMIT`.
    ///
    /// No `ON CONFLICT`: a token reference that exists already fails the statement
    /// (`tokens_pkey`), and with it the transaction, so nothing the caller sent with it commits.
    package static func creation(
        tokenReference: String, cardID: String, deviceID: String?, tokenRequestorID: String?, status: TokenStatusValue,
        attemptID: UUID, now: Date
    ) -> PostgresQuery {
        """
        INSERT INTO tokens (token_reference, card_id, device_id, token_requestor_id, status, attempt_id, created_at, updated_at)
        VALUES (\(tokenReference), \(cardID), \(deviceID), \(tokenRequestorID), \(status.rawValue), \(attemptID), \(now), \(now))
        """
    }

    /// How many of the card's tokens are active.
    package static func activeCount(cardID: String, connection: PostgresConnection) throws -> Int? {
        try connection.query(
            "SELECT count(*) AS n FROM tokens WHERE card_id = \(cardID) AND status = 'active'"
        ).first?.decode("n", as: Int.self)
    }

    /// How many of `references` are the card's tokens and not deleted.
    package static func liveCount(
        of references: [String], cardID: String, connection: PostgresConnection
    ) throws -> Int64 {
        try connection.query(
            """
            SELECT count(*)::int8 AS n FROM tokens
            WHERE card_id = \(cardID) AND status <> 'deleted' AND token_reference = ANY(\(references))
            """
        ).first?.decode("n", as: Int64.self) ?? 0
    }

    /// The token an attempt created, with its status, if any.
    package static func created(
        byAttempt attemptID: UUID, connection: PostgresConnection
    ) throws -> (tokenReference: String, status: String)? {
        guard
            let row = try connection.query(
                "SELECT token_reference, status FROM tokens WHERE attempt_id = \(attemptID)"
            ).first
        else { return nil }
        return (try row.decode("token_reference"), try row.decode("status"))
    }

    /// The token's card and status, locked for update.
    package static func lock(
        _ tokenReference: String, connection: PostgresConnection
    ) throws -> (cardID: String, status: TokenStatusValue)? {
        guard
            let row = try connection.query(
                "SELECT card_id, status FROM tokens WHERE token_reference = \(tokenReference) FOR UPDATE"
            ).first, let status = TokenStatusValue(rawValue: try row.decode("status"))
        else { return nil }
        return (try row.decode("card_id"), status)
    }

    package static func setStatus(
        _ tokenReference: String, to status: TokenStatusValue, now: Date, connection: PostgresConnection
    ) throws {
        try connection.execute(
            "UPDATE tokens SET status = \(status.rawValue), updated_at = \(now) WHERE token_reference = \(tokenReference)"
        )
    }

    /// The statement appending `events`, in order, to the token's history (for a pipeline).
    package static func eventsInsertion(
        _ events: [TokenEventKind], tokenReference: String, cardID: String?, source: String, at time: Date, now: Date
    ) -> PostgresQuery {
        var sql = PostgresQuery.StringInterpolation(literalCapacity: 160, interpolationCount: events.count * 6)
        sql.appendLiteral("INSERT INTO token_events (token_reference, card_id, event, source, at, recorded_at) VALUES ")
        for (index, event) in events.enumerated() {
            sql.appendLiteral(index == 0 ? "(" : ", (")
            sql.appendInterpolation(tokenReference)
            sql.appendLiteral(", ")
            sql.appendInterpolation(cardID)
            sql.appendLiteral(", ")
            sql.appendInterpolation(event.rawValue)
            sql.appendLiteral(", ")
            sql.appendInterpolation(source)
            sql.appendLiteral(", ")
            sql.appendInterpolation(time)
            sql.appendLiteral(", ")
            sql.appendInterpolation(now)
            sql.appendLiteral(")")
        }
        return PostgresQuery(stringInterpolation: sql)
    }

    /// Appends `events` to their tokens' histories in one statement, in order (as
    /// ``recordEvent(_:tokenReference:cardID:source:at:now:connection:)`` does one).
    package static func recordEvents(
        _ events: [(event: TokenEventKind, tokenReference: String, cardID: String)], source: String, at time: Date,
        now: Date, connection: PostgresConnection
    ) throws {
        guard !events.isEmpty else { return }
        try connection.execute(
            """
            INSERT INTO token_events (token_reference, card_id, event, source, at, recorded_at)
            SELECT e.token_reference, e.card_id, e.event, \(source), \(time), \(now)
            FROM unnest(\(events.map(\.tokenReference))::text[], \(events.map(\.cardID))::text[],
                        \(events.map(\.event.rawValue))::text[]) WITH ORDINALITY AS e(token_reference, card_id, event, n)
            ORDER BY e.n
            """)
    }

    /// Appends to the token's history (and to the `token_deletions` velocity when `deleted`).
    package static func recordEvent(
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

extension TokenStore {
    /// Records a token MDES's Authorize Service left awaiting step-up, under its unique reference
    /// (after its attempt: foreign key), with its history's `created` event, in one statement (to
    /// send with the transaction's `COMMIT`); nothing when the reference is taken already.
    package static func pendingMDESCreation(
        tokenReference: String, cardID: String, deviceID: String?, tokenRequestorID: String?, wallet: PostgresJSON,
        attemptID: UUID, now: Date
    ) -> PostgresQuery {
        """
        WITH created AS (
            INSERT INTO tokens (token_reference, card_id, device_id, token_requestor_id, wallet, status, attempt_id,
                                created_at, updated_at, service)
            VALUES (\(tokenReference), \(cardID), \(deviceID), \(tokenRequestorID),
                    \(wallet), 'pending_verification', \(attemptID), \(now), \(now), 'mdes')
            ON CONFLICT (token_reference) DO NOTHING RETURNING token_reference, card_id)
        INSERT INTO token_events (token_reference, card_id, event, source, at, recorded_at)
        SELECT token_reference, card_id, \(TokenEventKind.created.rawValue), 'mdes', \(now), \(now) FROM created
        """
    }

    /// Records a token MDES reports active that issuerd did not know, linked to the newest MDES
    /// attempt of its reference when there is one.
    package static func createActiveMDES(
        tokenReference: String, cardID: String, deviceID: String?, tokenRequestorID: String?, wallet: PostgresJSON,
        now: Date, connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            INSERT INTO tokens (token_reference, card_id, device_id, token_requestor_id, wallet, status, attempt_id,
                                created_at, updated_at, service)
            VALUES (\(tokenReference), \(cardID), \(deviceID), \(tokenRequestorID),
                    \(wallet), 'active',
                    (SELECT attempt_id FROM provisioning_attempts WHERE channel = 'mdes' AND token_reference = \(tokenReference)
                     ORDER BY created_at DESC LIMIT 1), \(now), \(now), 'mdes')
            """)
    }

    /// A known token MDES reports active: its wallet data merged in, served by MDES, active
    /// (a deleted token stays deleted).
    package static func activateMDES(
        tokenReference: String, tokenRequestorID: String?, wallet: PostgresJSON, now: Date,
        connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            UPDATE tokens SET wallet = wallet || \(wallet), service = 'mdes', updated_at = \(now),
                   token_requestor_id = \(tokenRequestorID),
                   status = CASE WHEN status = 'deleted' THEN status ELSE 'active' END
            WHERE token_reference = \(tokenReference)
            """)
    }

    /// Merges `wallet` into the token's wallet data.
    package static func mergeWallet(
        _ tokenReference: String, _ wallet: PostgresJSON, now: Date, connection: PostgresConnection
    ) throws {
        try connection.execute(
            "UPDATE tokens SET wallet = wallet || \(wallet), updated_at = \(now) WHERE token_reference = \(tokenReference)"
        )
    }

    /// Moves the token to another card (the funding account changed).
    package static func move(
        _ tokenReference: String, toCard cardID: String, now: Date, connection: PostgresConnection
    ) throws {
        try connection.execute(
            "UPDATE tokens SET card_id = \(cardID), updated_at = \(now) WHERE token_reference = \(tokenReference)")
    }

    /// What a card's status change does to its tokens.
    package enum CardChange: Sendable {
        /// Lost or stolen: live tokens suspended, remembering the status they had.
        case suspend
        /// Closed: every token deleted.
        case delete
        /// Active again: the tokens the card's suspension took, back to the status they had.
        case resume
    }

    /// Applies `change` to the card's tokens; the tokens it changed, with their service.
    package static func apply(
        _ change: CardChange, cardID: String, now: Date, connection: PostgresConnection
    ) throws -> [(reference: String, service: String)] {
        let affected: PostgresRows
        switch change {
        case .suspend:
            affected = try connection.query(
                """
                UPDATE tokens SET issuer_suspended_from = status, status = 'suspended', updated_at = \(now)
                WHERE card_id = \(cardID) AND status IN ('active', 'pending_verification') RETURNING token_reference, service
                """)
        case .delete:
            affected = try connection.query(
                """
                UPDATE tokens SET status = 'deleted', issuer_suspended_from = NULL, updated_at = \(now)
                WHERE card_id = \(cardID) AND status <> 'deleted' RETURNING token_reference, service
                """)
        case .resume:
            affected = try connection.query(
                """
                UPDATE tokens SET status = issuer_suspended_from, issuer_suspended_from = NULL, updated_at = \(now)
                WHERE card_id = \(cardID) AND status = 'suspended' AND issuer_suspended_from IS NOT NULL RETURNING token_reference, service
                """)
        }
        return try affected.map { (try $0.decode("token_reference"), try $0.decode("service")) }
    }
}

extension TokenStore {
    /// A token of a card being reissued, locked.
    package struct ReissuedToken: Sendable {
        package var reference: String
        package var status: TokenStatusValue
        /// `tsp` or `mdes`.
        package var service: String
        /// The status a card's loss or theft took it from; nil when not suspended by the issuer.
        package var issuerSuspendedFrom: String?

        /// Awaiting activation, even under a card suspension: deleted rather than moved.
        package var awaitingActivation: Bool {
            status == .pendingVerification || issuerSuspendedFrom == TokenStatusValue.pendingVerification.rawValue
        }
    }

    /// The card's tokens not yet deleted, by reference, locked for update.
    package static func lockLive(cardID: String, connection: PostgresConnection) throws -> [ReissuedToken] {
        try lockLive(cardIDs: [cardID], connection: connection)[cardID] ?? []
    }

    /// The cards' tokens not yet deleted, by card, each card's by reference, locked for update.
    package static func lockLive(
        cardIDs: [String], connection: PostgresConnection
    ) throws -> [String: [ReissuedToken]] {
        var live: [String: [ReissuedToken]] = [:]
        for row in try connection.query(
            """
            SELECT card_id, token_reference, status, service, issuer_suspended_from FROM tokens
            WHERE card_id = ANY(\(cardIDs)::text[]) AND status <> 'deleted' ORDER BY token_reference FOR UPDATE
            """)
        {
            guard let status = TokenStatusValue(rawValue: try row.decode("status")) else { continue }
            live[try row.decode("card_id"), default: []].append(
                ReissuedToken(
                    reference: try row.decode("token_reference"), status: status, service: try row.decode("service"),
                    issuerSuspendedFrom: try row.decode("issuer_suspended_from")))
        }
        return live
    }

    /// Deletes `references` for the issuer (a reissue's unactivated and fraud tokens).
    package static func delete(_ references: [String], now: Date, connection: PostgresConnection) throws {
        guard !references.isEmpty else { return }
        try connection.execute(
            """
            UPDATE tokens SET status = 'deleted', issuer_suspended_from = NULL, updated_at = \(now)
            WHERE token_reference = ANY(\(references))
            """)
    }

    /// Moves each token to its card (a reissue's new card); those the old card's loss or theft
    /// suspended go back to the status they had.
    package static func move(
        _ moves: [(reference: String, cardID: String)], now: Date, connection: PostgresConnection
    ) throws {
        guard !moves.isEmpty else { return }
        try connection.execute(
            """
            UPDATE tokens t SET card_id = m.card_id, updated_at = \(now),
                   status = coalesce(t.issuer_suspended_from, t.status), issuer_suspended_from = NULL
            FROM unnest(\(moves.map(\.reference))::text[], \(moves.map(\.cardID))::text[]) AS m(token_reference, card_id)
            WHERE t.token_reference = m.token_reference
            """)
    }
}

extension TokenStore {
    /// One token as operators see it (`GET /v1/admin/cards/{cardId}/tokens`): its state and
    /// where it came from; nothing of the wallet's own data.
    package struct AdminView: Codable, Sendable, Equatable {
        package var tokenReference: String
        package var status: String
        /// `tsp` (Apple's and the generic token service) or `mdes` (Mastercard's issuer services).
        package var service: String
        package var deviceId: String?
        package var tokenRequestorId: String?
        /// The status a card suspension took it from (it returns there when the card is active again).
        package var suspendedByIssuerFrom: String?
        /// The risk decision that created it.
        package var attemptId: String?
        package var createdAt: String
        package var updatedAt: String
    }

    /// The most tokens ``adminViews(cardID:connection:)`` lists (newest first).
    package static let adminListLimit = 200

    /// The card's tokens, newest first, at most ``adminListLimit``.
    package static func adminViews(cardID: String, connection: PostgresConnection) throws -> [AdminView] {
        try connection.query(
            """
            SELECT token_reference, status, service, device_id, token_requestor_id, issuer_suspended_from,
                   attempt_id::text AS attempt_id, created_at, updated_at
            FROM tokens WHERE card_id = \(cardID)
            ORDER BY created_at DESC, token_reference LIMIT \(adminListLimit)
            """
        ).map { row in
            AdminView(
                tokenReference: try row.decode("token_reference"), status: try row.decode("status"),
                service: try row.decode("service"), deviceId: try row.decode("device_id"),
                tokenRequestorId: try row.decode("token_requestor_id"),
                suspendedByIssuerFrom: try row.decode("issuer_suspended_from"), attemptId: try row.decode("attempt_id"),
                createdAt: RFC3339.string(try row.decode("created_at")),
                updatedAt: RFC3339.string(try row.decode("updated_at")))
        }
    }
}
