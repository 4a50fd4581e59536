import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdOutbox
import IssuerdPostgres
import IssuerdStorage

/// A card status change and what it does to the card's tokens, in one transaction with its audit
/// entry and the token service's notifications (outbox rows; the dispatcher delivers them): a
/// `tsp` message, or for a Mastercard token (`service = 'mdes'`) a Customer Service API call
/// (``MDESTokenChange``: lost → suspend `L`, stolen → suspend `S`, closed → delete `C`, active
/// again → unsuspend `F`).
///
/// Token effects (a lost, stolen or closed card's tokens are suspended or deleted at the TSP):
/// - `lost`, `stolen`: active and pending tokens become `suspended` (TSP action `suspend`); the
///   state each had is kept in `tokens.issuer_suspended_from`.
/// - `closed`: every token not yet deleted becomes `deleted` (TSP action `delete`). Closed is
///   final: any later change is 409 `invalid_state`.
/// - `active` (e.g. a lost card found again): only the tokens the issuer suspended go back to the
///   state they had (TSP action `resume`); a token suspended by the TSP or the cardholder stays.
/// - `blocked`: tokens are left alone; authorizations of a blocked card are declined anyway.
/// Setting the status a card already has changes nothing and writes nothing.
enum CardStatusChange {
    /// What the change did.
    struct Outcome: Sendable {
        var card: CardRecord
        var previous: CardStatusValue
        var tokensAffected: Int
    }

    /// Applies the change within the caller's transaction.
    ///
    /// - Returns: nil when the card does not exist.
    /// - Throws: 409 `invalid_state` when the card is closed.
    static func apply(
        cardID: String, to status: CardStatusValue, reason: String?, actor: String, now: Date,
        reissue: ReissueContext? = nil, connection: PostgresConnection
    ) throws -> Outcome? {
        guard let previous = try CardStore.lockStatus(cardID, connection: connection) else { return nil }
        if previous == status {
            guard let card = try CardStore.find(cardID, connection: connection) else { return nil }
            return Outcome(card: card, previous: previous, tokensAffected: 0)
        }
        guard previous != .closed, previous != .replaced else {
            throw APIErrors.invalidState("a \(previous.rawValue) card cannot change status")
        }
        if previous == .inactive {
            // A reissued card's new record: activating it applies the reissue waiting for it.
            guard status == .active else { throw APIErrors.invalidState("an inactive card can only be activated") }
            if let waiting = try ReissueStore.waiting(newCardID: cardID, connection: connection) {
                guard let reissue else { throw APIErrors.invalidState("the card's reissue cannot be applied here") }
                try CardReissue.apply(
                    waiting, actor: actor, now: now, vault: reissue.vault, keys: reissue.keys, connection: connection)
            }
        }
        _ = try CardStore.setStatus(cardID, to: status, reason: reason, actor: actor, now: now, connection: connection)
        guard
            let changeID = try connection.query(
                "SELECT currval(pg_get_serial_sequence('card_status_history', 'id')) AS id"
            ).first
        else { throw PostgresError(code: .other, message: "status history id unavailable") }
        let statusChangeID = try changeID.decode("id", as: Int64.self)

        // Blocked leaves the tokens alone: authorizations of a blocked card are declined anyway.
        let effect: (action: String, event: TokenEventKind, change: TokenStore.CardChange)?
        switch status {
        case .lost, .stolen: effect = ("suspend", .suspended, .suspend)
        case .closed: effect = ("delete", .deleted, .delete)
        case .active where previous == .inactive: effect = nil
        case .active: effect = ("resume", .resumed, .resume)
        case .blocked, .inactive, .replaced: effect = nil
        }
        let tokens =
            try effect.map { try TokenStore.apply($0.change, cardID: cardID, now: now, connection: connection) } ?? []
        for (token, service) in tokens.sorted(by: { $0.reference < $1.reference }) {
            guard let (action, event, _) = effect else { break }
            try TokenStore.recordEvent(
                event, tokenReference: token, cardID: cardID, source: "issuer", at: now, now: now,
                connection: connection)
            // A Mastercard token changes through the Customer Service API, with Mastercard's reason code.
            if service == "mdes", let change = Self.mdesChange(status) {
                try MDESCustomerServicePayload.enqueue(
                    tokenReference: token, change: change, cardID: cardID, occurrence: String(statusChangeID),
                    connection: connection)
                continue
            }
            let payload = try PostgresJSON(
                encoding: TSPNotification(
                    tokenReference: token, action: action, reason: "card_\(status.rawValue)", cardId: cardID))
            try connection.execute(
                """
                INSERT INTO outbox (kind, dedup_key, payload, next_attempt_at, traceparent)
                VALUES ('tsp', \("tsp:\(token):\(action):\(statusChangeID)"), \(payload), \(now),
                        \(TraceContext.current?.traceparent))
                """)
        }
        var details = ["from": previous.rawValue, "to": status.rawValue, "tokensAffected": String(tokens.count)]
        if let reason { details["reason"] = reason }
        try AuditLog.append(
            actor: actor, action: "card.status_changed", subject: "card:\(cardID)", details: details, at: now,
            connection: connection)
        guard let card = try CardStore.find(cardID, connection: connection) else { return nil }
        return Outcome(card: card, previous: previous, tokensAffected: tokens.count)
    }

    /// The Customer Service API change a card status makes to the card's Mastercard tokens.
    private static func mdesChange(_ status: CardStatusValue) -> MDESTokenChange? {
        switch status {
        case .lost: .cardLost
        case .stolen: .cardStolen
        case .closed: .cardClosed
        case .active: .cardReopened
        case .blocked, .inactive, .replaced: nil
        }
    }
}

/// What activating a reissued card needs to apply its reissue: the vault (the PANs) and the keys
/// the new account data is encrypted to.
struct ReissueContext: Sendable {
    var vault: PANVault
    var keys: ReissueSettings
}

/// The outbox payload of a TSP notification (`outbox.kind = 'tsp'`).
struct TSPNotification: Codable, Sendable, Equatable {
    var tokenReference: String
    /// `suspend`, `resume` or `delete`.
    var action: String
    /// Why, as a stable word such as `card_lost`.
    var reason: String
    var cardId: String
}
