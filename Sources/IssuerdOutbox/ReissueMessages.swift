import Foundation
import IssuerdCore
import IssuerdMDES
import IssuerdPostgres
import IssuerdStorage

/// What an `mdes_csapi` message of action `update` stores: one `/token/update` call by the old
/// Account PAN for every Mastercard token of a reissued card. The new account data is already
/// encrypted to Mastercard's key when enqueued, so no PAN is ever in the outbox in clear.
package struct MDESTokenUpdatePayload: Codable, Sendable, Equatable {
    /// The first token moved (the admin view shows every message by one token).
    package var tokenReference: String
    /// Always `update`.
    package var action: String
    package var reissueId: String
    package var cardId: String
    /// The tokens the call should move (the answer's list confirms them).
    package var tokenReferences: [String]
    /// The tokens to unsuspend (`F`) once moved: the card's loss or theft suspended them.
    package var resumeTokens: [String]
    package var encryptedAccountInformation: EncryptedPayload
    package var notifyWallet: Bool
    package var commentText: String

    /// The call as an outbox message (dedup key `mdes_csapi:update:<reissue>`); nil without
    /// tokens.
    package static func message(
        reissueID: String, newCardID: String, tokens: [String], resume: [String], account: EncryptedPayload,
        notifyWallet: Bool
    ) throws -> OutboxStore.Message? {
        guard let first = tokens.first else { return nil }
        return try OutboxStore.Message(
            kind: .mdesCustomerService, dedupKey: "mdes_csapi:update:\(reissueID)",
            payload: MDESTokenUpdatePayload(
                tokenReference: first, action: "update", reissueId: reissueID, cardId: newCardID,
                tokenReferences: tokens, resumeTokens: resume, encryptedAccountInformation: account,
                notifyWallet: notifyWallet, commentText: "Card reissued; its tokens move to the new account data"))
    }
}

/// What a `tsp` message of event `pan_lifecycle` stores and posts: the reissued card's tokens and
/// its new account data, encrypted like Mastercard's (field-level) to the TSP gateway's
/// certificate, so a gateway can map it to the network's own PAN update call.
package struct PANLifecyclePayload: Codable, Sendable, Equatable {
    /// Always `pan_lifecycle`.
    package var event: String
    /// `ACCOUNT_UPDATE` (a new PAN) or `EXP_DATE_UPDATE` (the same PAN, a new expiry).
    package var operation: String
    package var tokenReferences: [String]
    package var encryptedAccount: EncryptedPayload
    /// The first token (the admin view shows every message by one token).
    package var tokenReference: String
    package var cardId: String
    package var previousCardId: String
    package var reissueId: String
    /// Tokens to resume (a `resume` notification each) once this one is delivered; not posted.
    package var resumeTokens: [String]

    /// Creates the value from every stored property.
    package init(
        event: String, operation: String, tokenReferences: [String], encryptedAccount: EncryptedPayload,
        tokenReference: String, cardId: String, previousCardId: String, reissueId: String, resumeTokens: [String]
    ) {
        self.event = event
        self.operation = operation
        self.tokenReferences = tokenReferences
        self.encryptedAccount = encryptedAccount
        self.tokenReference = tokenReference
        self.cardId = cardId
        self.previousCardId = previousCardId
        self.reissueId = reissueId
        self.resumeTokens = resumeTokens
    }

    /// The notification as an outbox message (dedup key `tsp:pan_lifecycle:<reissue>`); nil
    /// without tokens.
    package func message() throws -> OutboxStore.Message? {
        guard !tokenReferences.isEmpty else { return nil }
        return try OutboxStore.Message(kind: .tsp, dedupKey: "tsp:pan_lifecycle:\(reissueId)", payload: self)
    }
}

/// A reissue's progress as its outbox messages are answered: each token's state, the reissue's
/// status, and the calls that must wait for a move (the unsuspends and resumes, so they follow
/// it in order even when the move was retried).
package enum ReissueProgress {
    /// The fields every message kind shares that tell a reissue's message.
    private struct Head: Decodable {
        var action: String?
        var event: String?
        var reissueId: String?
        var tokenReference: String?
    }

    /// Records a delivered message of a reissue, within the dispatcher's transaction.
    ///
    /// - Parameter updated: The tokens a `/token/update` answer listed.
    package static func delivered(
        _ message: OutboxStore.Claimed, updated: [String]?, now: Date, connection: PostgresConnection
    ) throws {
        guard let head = try? message.payload.decode(Head.self),
            let reissueID = head.reissueId.flatMap(UUID.init(uuidString:))
        else { return }
        switch (message.kind, head.action, head.event) {
        case (.mdesCustomerService, "update"?, _):
            guard let payload = try? message.payload.decode(MDESTokenUpdatePayload.self) else { return }
            let listed = Set(updated ?? [])
            let confirmed = payload.tokenReferences.filter { listed.contains($0) }
            try ReissueStore.setState(
                .confirmed, reissueID: reissueID, tokens: confirmed, reopening: true, now: now, connection: connection)
            try ReissueStore.setState(
                .sent, reissueID: reissueID, tokens: payload.tokenReferences.filter { !listed.contains($0) },
                reopening: true, now: now, connection: connection)
            for token in payload.resumeTokens {
                try MDESCustomerServicePayload.enqueue(
                    tokenReference: token, change: .reissueResumed, cardID: payload.cardId,
                    occurrence: payload.reissueId,
                    reissueID: payload.reissueId, connection: connection)
            }
        case (.mdesCustomerService, "delete"?, _), (.tsp, "delete"?, _):
            try ReissueStore.setState(
                .confirmed, reissueID: reissueID, tokens: head.tokenReference.map { [$0] } ?? [], reopening: true,
                now: now, connection: connection)
        case (.tsp, _, "pan_lifecycle"?):
            guard let payload = try? message.payload.decode(PANLifecyclePayload.self) else { return }
            try ReissueStore.setState(
                .confirmed, reissueID: reissueID, tokens: payload.tokenReferences, reopening: true, now: now,
                connection: connection)
            for token in payload.resumeTokens {
                try OutboxStore.enqueue(
                    kind: .tsp, dedupKey: "tsp:\(token):resume:\(payload.reissueId)",
                    payload: TSPNotificationPayload(
                        tokenReference: token, action: "resume", reason: "card_reissued", cardId: payload.cardId,
                        reissueId: payload.reissueId),
                    connection: connection)
            }
        default:
            return
        }
    }

    /// Records a dead-lettered message of a reissue: its tokens `failed`, with the error.
    package static func deadLettered(
        _ message: OutboxStore.Claimed, error: String, now: Date, connection: PostgresConnection
    ) throws {
        guard let head = try? message.payload.decode(Head.self),
            let reissueID = head.reissueId.flatMap(UUID.init(uuidString:))
        else { return }
        var tokens = head.tokenReference.map { [$0] } ?? []
        if head.action == "update", let payload = try? message.payload.decode(MDESTokenUpdatePayload.self) {
            tokens = payload.tokenReferences
        } else if head.event == "pan_lifecycle", let payload = try? message.payload.decode(PANLifecyclePayload.self) {
            tokens = payload.tokenReferences
        }
        try ReissueStore.setState(
            .failed, reissueID: reissueID, tokens: tokens, error: error, now: now, connection: connection)
    }
}
