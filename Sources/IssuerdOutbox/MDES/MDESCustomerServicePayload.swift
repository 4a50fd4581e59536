import Foundation
import IssuerdMDES
import IssuerdPostgres

/// What an `mdes_csapi` outbox message stores: the call to make, not yet its body, so the
/// `AuditInfo` and the signature are those of the instance that delivers it.
///
/// `tokenReference` and `action` are named as in ``TSPNotificationPayload``, so the admin view
/// shows both kinds alike.
package struct MDESCustomerServicePayload: Codable, Sendable, Equatable {
    /// The token's `TokenUniqueReference`.
    package var tokenReference: String
    /// The operation: `activate`, `suspend`, `unsuspend` or `delete`.
    package var action: String
    /// Mastercard's `ReasonCode`.
    package var reasonCode: String
    package var commentText: String
    /// Why, as a stable word (``MDESTokenChange`` raw value, e.g. `card_lost`).
    package var reason: String
    package var cardId: String?
    /// The reissue this call is part of (its progress is recorded when the call is answered).
    package var reissueId: String?

    /// The payload of `change` for `tokenReference`.
    package init(tokenReference: String, change: MDESTokenChange, cardID: String?, reissueID: String? = nil) {
        self.tokenReference = tokenReference
        action = change.operation.rawValue
        reasonCode = String(change.reasonCode)
        commentText = change.commentText
        reason = change.rawValue
        cardId = cardID
        reissueId = reissueID
    }

    /// The request this payload describes, with `auditInfo`.
    ///
    /// - Throws: ``CustomerServiceRequestError`` when a stored field no longer fits Mastercard's
    ///   schema (a token reference of another service, an unknown operation).
    package func request(auditInfo: AuditInfo) throws -> CustomerServiceRequest {
        guard let operation = CustomerServiceOperation(rawValue: action), let code = reasonCode.first,
            reasonCode.count == 1
        else { throw CustomerServiceRequestError("unknown operation or reason code") }
        return try CustomerServiceRequest(
            operation, tokenUniqueReference: tokenReference, reasonCode: code, commentText: commentText,
            deleteFromConsumerApp: operation == .delete ? false : nil, auditInfo: auditInfo)
    }

    /// Enqueues the call for `change` within the caller's transaction.
    ///
    /// - Parameters:
    ///   - occurrence: What makes this change unique (a status change id, a challenge id): the
    ///     dedup key is `mdes_csapi:<token>:<operation>:<occurrence>`, so the same change is never
    ///     queued twice.
    ///   - now: When the message is due (the change's time).
    /// - Returns: Whether a row was inserted.
    @discardableResult
    package static func enqueue(
        tokenReference: String, change: MDESTokenChange, cardID: String?, occurrence: String,
        reissueID: String? = nil, connection: PostgresConnection
    ) throws -> Bool {
        let message = try message(
            tokenReference: tokenReference, change: change, cardID: cardID, occurrence: occurrence, reissueID: reissueID
        )
        return try OutboxStore.enqueue([message], connection: connection) == 1
    }

    /// The message ``enqueue(tokenReference:change:cardID:occurrence:reissueID:connection:)``
    /// queues, for a caller queueing many at once.
    package static func message(
        tokenReference: String, change: MDESTokenChange, cardID: String?, occurrence: String, reissueID: String? = nil
    ) throws -> OutboxStore.Message {
        try OutboxStore.Message(
            kind: .mdesCustomerService,
            dedupKey: "mdes_csapi:\(tokenReference):\(change.operation.rawValue):\(occurrence)",
            payload: MDESCustomerServicePayload(
                tokenReference: tokenReference, change: change, cardID: cardID, reissueID: reissueID))
    }
}
