import Foundation
import IssuerdCore
import IssuerdPostgres

/// Why a card is reissued (`card_reissues.reason`).
package enum ReissueReason: String, Sendable, CaseIterable, Codable {
    case renewal, damaged, lost, stolen, compromised
    case tokenFraud = "token_fraud"
    case productChange = "product_change"

    /// Lost, stolen, compromised and token fraud need a new PAN; the others may keep it.
    package var needsNewPAN: Bool {
        switch self {
        case .lost, .stolen, .compromised, .tokenFraud: true
        case .renewal, .damaged, .productChange: false
        }
    }
}

/// Where a reissue stands (`card_reissues.status`).
package enum ReissueStatus: String, Sendable, CaseIterable, Codable {
    case awaitingActivation = "awaiting_activation"
    case inProgress = "in_progress"
    case completed, failed
}

/// One token's progress in a reissue (`card_reissue_tokens.state`).
package enum ReissueTokenState: String, Sendable, CaseIterable, Codable {
    case pending, sent, confirmed, failed
}

/// A reissue row.
package struct ReissueRecord: Sendable, Equatable {
    package var reissueID: UUID
    package var reason: ReissueReason
    package var oldCardID: String
    package var newCardID: String
    /// `activation` or `now`.
    package var applyAt: String
    package var notifyWallet: Bool
    package var panChanged: Bool
    package var panSequenceNumber: String?
    package var fraudTokens: [String]
    package var status: ReissueStatus

    /// Creates the value from every stored property.
    package init(
        reissueID: UUID, reason: ReissueReason, oldCardID: String, newCardID: String, applyAt: String,
        notifyWallet: Bool, panChanged: Bool, panSequenceNumber: String?, fraudTokens: [String], status: ReissueStatus
    ) {
        self.reissueID = reissueID
        self.reason = reason
        self.oldCardID = oldCardID
        self.newCardID = newCardID
        self.applyAt = applyAt
        self.notifyWallet = notifyWallet
        self.panChanged = panChanged
        self.panSequenceNumber = panSequenceNumber
        self.fraudTokens = fraudTokens
        self.status = status
    }
}

/// Reads and writes `card_reissues` and `card_reissue_tokens` (sql/0035): the reissue, the
/// expected token → card mapping once applied, and each token's progress at its network.
package enum ReissueStore {
    private static let columns = """
        reissue_id, reason, old_card_id, new_card_id, apply_at, notify_wallet, pan_changed, pan_sequence_number,
        fraud_tokens, status
        """

    /// Inserts reissues within the caller's transaction, in one statement. A record already
    /// applied (a file's line applied at once) is inserted with its final status, `applied_at`
    /// (and `completed_at` when completed) set to `now`, rather than updated afterwards.
    ///
    /// - Throws: 409 `reissue_pending` when an old card already has one awaiting activation (or
    ///   a new card is another reissue's).
    package static func insert(
        _ records: [ReissueRecord], actor: String, now: Date, connection: PostgresConnection
    ) throws {
        guard !records.isEmpty else { return }
        // Arrays of arrays do not unnest: each reissue's fraud tokens travel as a JSON array.
        let fraudTokens = try records.map { String(decoding: try JSONEncoder().encode($0.fraudTokens), as: UTF8.self) }
        do {
            try connection.execute(
                """
                INSERT INTO card_reissues (reissue_id, reason, old_card_id, new_card_id, apply_at, notify_wallet, pan_changed,
                                           pan_sequence_number, fraud_tokens, status, actor, created_at, applied_at,
                                           completed_at)
                SELECT r.reissue_id::uuid, r.reason, r.old_card_id, r.new_card_id, r.apply_at, r.notify_wallet::boolean,
                       r.pan_changed::boolean, nullif(r.pan_sequence_number, ''),
                       ARRAY(SELECT jsonb_array_elements_text(r.fraud_tokens::jsonb)), r.status, \(actor), \(now),
                       CASE WHEN r.status <> 'awaiting_activation' THEN \(now)::timestamptz END,
                       CASE WHEN r.status IN ('completed', 'failed') THEN \(now)::timestamptz END
                FROM unnest(\(records.map { $0.reissueID.uuidString })::text[], \(records.map(\.reason.rawValue))::text[],
                            \(records.map(\.oldCardID))::text[], \(records.map(\.newCardID))::text[],
                            \(records.map(\.applyAt))::text[], \(records.map { String($0.notifyWallet) })::text[],
                            \(records.map { String($0.panChanged) })::text[], \(records.map { $0.panSequenceNumber ?? "" })::text[],
                            \(fraudTokens)::text[], \(records.map(\.status.rawValue))::text[])
                     AS r(reissue_id, reason, old_card_id, new_card_id, apply_at, notify_wallet, pan_changed, pan_sequence_number,
                          fraud_tokens, status)
                """)
        } catch let error as PostgresError where error.code == .uniqueViolation {
            throw pending()
        }
    }

    /// 409 `reissue_pending`.
    package static func pending() -> Refusal {
        Refusal(.conflict, code: "reissue_pending", message: "the card has a reissue waiting for activation")
    }

    package static func find(_ reissueID: UUID, connection: PostgresConnection) throws -> ReissueRecord? {
        try connection.query("SELECT \(unsafeSQL: columns) FROM card_reissues WHERE reissue_id = \(reissueID)")
            .first.map(decode)
    }

    /// The reissue waiting for `cardID` (the old card) to be replaced, locked.
    package static func waiting(oldCardID cardID: String, connection: PostgresConnection) throws -> ReissueRecord? {
        try connection.query(
            """
            SELECT \(unsafeSQL: columns) FROM card_reissues
            WHERE old_card_id = \(cardID) AND status = 'awaiting_activation' FOR UPDATE
            """
        ).first.map(decode)
    }

    /// The reissue waiting for its new card `cardID` to be activated, locked.
    package static func waiting(newCardID cardID: String, connection: PostgresConnection) throws -> ReissueRecord? {
        try connection.query(
            """
            SELECT \(unsafeSQL: columns) FROM card_reissues
            WHERE new_card_id = \(cardID) AND status = 'awaiting_activation' FOR UPDATE
            """
        ).first.map(decode)
    }

    /// The newest reissues touching `cardID`, as old or new card (the console's card panel).
    package static func recent(cardID: String, limit: Int, connection: PostgresConnection) throws -> [ReissueRecord] {
        try connection.query(
            """
            SELECT \(unsafeSQL: columns) FROM card_reissues
            WHERE old_card_id = \(cardID) OR new_card_id = \(cardID) ORDER BY created_at DESC LIMIT \(limit)
            """
        ).map(decode)
    }

    /// Marks reissues applied (`in_progress`, then ``refreshStatus(_:now:connection:)``: those
    /// without tokens are `completed` at once).
    package static func markApplied(_ reissueIDs: [UUID], now: Date, connection: PostgresConnection) throws {
        guard !reissueIDs.isEmpty else { return }
        try connection.execute(
            """
            UPDATE card_reissues SET status = 'in_progress', applied_at = \(now)
            WHERE reissue_id = ANY(\(reissueIDs.map(\.uuidString))::uuid[])
            """)
        try refreshStatus(reissueIDs, now: now, connection: connection)
    }

    /// One token of an applied reissue: what happens to it.
    package struct TokenAction: Sendable {
        package var reissueID: UUID
        package var tokenReference: String
        /// `mdes` or `tsp`.
        package var service: String
        /// `move` or `delete`.
        package var action: String
        package var resume: Bool

        package init(reissueID: UUID, tokenReference: String, service: String, action: String, resume: Bool) {
            self.reissueID = reissueID
            self.tokenReference = tokenReference
            self.service = service
            self.action = action
            self.resume = resume
        }
    }

    /// Records the tokens of applied reissues, each `pending`, in one statement.
    package static func addTokens(_ tokens: [TokenAction], now: Date, connection: PostgresConnection) throws {
        guard !tokens.isEmpty else { return }
        try connection.execute(
            """
            INSERT INTO card_reissue_tokens (reissue_id, token_reference, service, action, resume, updated_at)
            SELECT t.reissue_id::uuid, t.token_reference, t.service, t.action, t.resume::boolean, \(now)
            FROM unnest(\(tokens.map(\.reissueID.uuidString))::text[], \(tokens.map(\.tokenReference))::text[],
                        \(tokens.map(\.service))::text[], \(tokens.map(\.action))::text[],
                        \(tokens.map { String($0.resume) })::text[]) AS t(reissue_id, token_reference, service, action, resume)
            """)
    }

    /// Sets the state of `tokens` of the reissue, then the reissue's status from its tokens. A
    /// confirmed token keeps its state; a failed one too, unless `reopening` (a dead letter an
    /// operator put back was delivered after all).
    package static func setState(
        _ state: ReissueTokenState, reissueID: UUID, tokens: [String], error: String? = nil, reopening: Bool = false,
        now: Date, connection: PostgresConnection
    ) throws {
        guard !tokens.isEmpty else { return }
        let from = reopening ? ["pending", "sent", "failed"] : ["pending", "sent"]
        try connection.execute(
            """
            UPDATE card_reissue_tokens SET state = \(state.rawValue), error = \(error.map { String($0.prefix(600)) }),
                   updated_at = \(now)
            WHERE reissue_id = \(reissueID) AND token_reference = ANY(\(tokens)) AND state = ANY(\(from))
            """)
        try refreshStatus(reissueID, now: now, connection: connection)
    }

    /// An applied reissue's status from its tokens: `in_progress` while one is pending or sent,
    /// then `failed` when one failed, `completed` when every one is confirmed.
    package static func refreshStatus(_ reissueID: UUID, now: Date, connection: PostgresConnection) throws {
        try refreshStatus([reissueID], now: now, connection: connection)
    }

    /// ``refreshStatus(_:now:connection:)`` of several reissues in one statement.
    package static func refreshStatus(_ reissueIDs: [UUID], now: Date, connection: PostgresConnection) throws {
        try connection.execute(
            """
            UPDATE card_reissues r SET status = s.status,
                   completed_at = CASE WHEN s.status = 'in_progress' THEN NULL ELSE coalesce(r.completed_at, \(now)) END
            FROM (SELECT i.reissue_id,
                         CASE WHEN bool_or(t.state IN ('pending', 'sent')) THEN 'in_progress'
                              WHEN bool_or(t.state = 'failed') THEN 'failed' ELSE 'completed' END AS status
                  FROM unnest(\(reissueIDs.map(\.uuidString))::uuid[]) AS i(reissue_id)
                  LEFT JOIN card_reissue_tokens t ON t.reissue_id = i.reissue_id
                  GROUP BY i.reissue_id) s
            WHERE r.reissue_id = s.reissue_id AND r.status IN ('in_progress', 'completed', 'failed')
              AND r.status IS DISTINCT FROM s.status
            """)
    }

    /// What a network's word about a token's new account meant.
    package enum Confirmation: Sendable, Equatable {
        /// A token a reissue moved: confirmed now (or already).
        case confirmed(UUID)
        /// No reissue ever moved this token: someone else changed its account.
        case unrequested
    }

    /// Confirms the newest move of `tokenReference` (an MDES `FUNDING_ACCOUNT_UPDATE` or
    /// `REDIGITIZATION_COMPLETE`).
    package static func confirmMove(
        tokenReference: String, now: Date, connection: PostgresConnection
    ) throws -> Confirmation {
        guard
            let row = try connection.query(
                """
                SELECT t.reissue_id FROM card_reissue_tokens t JOIN card_reissues r USING (reissue_id)
                WHERE t.token_reference = \(tokenReference) AND t.action = 'move'
                ORDER BY r.applied_at DESC NULLS LAST LIMIT 1
                """
            ).first
        else { return .unrequested }
        let reissueID = try row.decode("reissue_id", as: UUID.self)
        try setState(.confirmed, reissueID: reissueID, tokens: [tokenReference], now: now, connection: connection)
        return .confirmed(reissueID)
    }

    /// One token's progress, as `GET /v1/admin/reissues/{id}` shows it.
    package struct TokenView: Codable, Sendable, Equatable {
        package var tokenReference: String
        /// `mastercard` (Customer Service API) or `tsp` (the token service's notifications).
        package var network: String
        package var action: String
        package var state: String
        package var error: String?
    }

    /// The reissue's tokens, ordered by reference.
    package static func tokens(_ reissueID: UUID, connection: PostgresConnection) throws -> [TokenView] {
        try connection.query(
            """
            SELECT token_reference, service, action, state, error FROM card_reissue_tokens
            WHERE reissue_id = \(reissueID) ORDER BY action DESC, token_reference
            """
        ).map { row in
            TokenView(
                tokenReference: try row.decode("token_reference"),
                network: try row.decode("service", as: String.self) == "mdes" ? "mastercard" : "tsp",
                action: try row.decode("action"), state: try row.decode("state"), error: try row.decode("error"))
        }
    }

    private static func decode(_ row: PostgresRow) throws -> ReissueRecord {
        guard let reason = ReissueReason(rawValue: try row.decode("reason")),
            let status = ReissueStatus(rawValue: try row.decode("status"))
        else { throw PostgresError(code: .decoding, message: "card_reissues holds an unknown reason or status") }
        return ReissueRecord(
            reissueID: try row.decode("reissue_id"), reason: reason, oldCardID: try row.decode("old_card_id"),
            newCardID: try row.decode("new_card_id"), applyAt: try row.decode("apply_at"),
            notifyWallet: try row.decode("notify_wallet"), panChanged: try row.decode("pan_changed"),
            panSequenceNumber: try row.decode("pan_sequence_number"), fraudTokens: try row.decode("fraud_tokens"),
            status: status)
    }
}
