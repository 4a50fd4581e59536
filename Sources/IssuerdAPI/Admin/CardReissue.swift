import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdMDES
import IssuerdOutbox
import IssuerdPostgres
import IssuerdStorage

/// `POST /v1/admin/cards/{cardId}/reissue`'s body.
struct CardReissueRequest: Decodable, Sendable {
    struct NewCard: Decodable, Sendable {
        var cardId: String?
        var accountNumber: String?
        var expiration: String
        var panSequenceNumber: String?
        var cardholderName: String?
    }

    var reason: String
    var newCard: NewCard
    var applyAt: String?
    var fraudTokens: [String]?
    var notifyWallet: Bool?
}

/// A card reissue that keeps the customer's wallet tokens (docs/networks.md, "Card reissue"),
/// each step in the caller's transaction with its audit entry and outbox rows.
///
/// Starting it makes the new card record (`inactive`, the old card's
/// `primaryAccountIdentifier`, the new PAN or the old one). Applying it, when the new card is
/// activated or at once: tokens awaiting activation and the named fraud tokens are deleted, every
/// other live token moves to the new card (those the old card's loss or theft suspended are
/// resumed), the old card becomes `replaced`, and the networks are told through the outbox:
/// Mastercard tokens by one Customer Service API `/token/update` by the old Account PAN, other
/// tokens by one `pan_lifecycle` TSP notification; deletes and resumes as their own messages.
enum CardReissue {
    /// A request that passed every check that needs no database.
    struct Validated: Sendable {
        var reason: ReissueReason
        var newCardID: String
        var pan: PrimaryAccountNumber?
        var expiration: CardExpiration
        var panSequenceNumber: String?
        var cardholderName: String?
        var applyNow: Bool
        var fraudTokens: [String]
        var notifyWallet: Bool
    }

    /// Checks the body's shape and bounds.
    ///
    /// - Throws: 400 `invalid_request` naming the field (an unknown reason, a malformed expiry,
    ///   fraud tokens without `token_fraud`); 400 `pan_must_change` for a lost, stolen,
    ///   compromised or fraud reissue without a new PAN; 422 `invalid_card` for a PAN failing the
    ///   Luhn check or an expired card.
    static func validate(_ body: CardReissueRequest, now: Date) throws -> Validated {
        guard body.reason.utf8.count <= 32, let reason = ReissueReason(rawValue: body.reason) else {
            throw AdminValidation.invalid(
                "reason", "must be one of \(ReissueReason.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let newCardID =
            try body.newCard.cardId.map { try AdminValidation.identifier($0, field: "newCard.cardId") }
            ?? CardRegistration.generatedID(try SecureRandom.bytes(count: 12))
        var pan: PrimaryAccountNumber?
        if let number = body.newCard.accountNumber {
            guard number.utf8.count <= 19, let valid = PrimaryAccountNumber(number) else {
                throw Refusal(
                    .unacceptable, code: AdminErrorCode.invalidCard,
                    message: "newCard.accountNumber must be 12 to 19 digits passing the Luhn check",
                    context: ["detail": "luhn"])
            }
            pan = valid
        }
        if reason.needsNewPAN, pan == nil { throw panMustChange(reason) }
        guard body.newCard.expiration.utf8.count <= 8 else {
            throw AdminValidation.invalid("newCard.expiration", "must be MM/YY")
        }
        let expiration: CardExpiration
        do {
            expiration = try AdminValidation.expiration(body.newCard.expiration, now: now)
        } catch let refusal as Refusal where refusal.kind == .invalid {
            throw AdminValidation.invalid("newCard.expiration", "must be MM/YY")
        }
        if let sequence = body.newCard.panSequenceNumber {
            guard (2...3).contains(sequence.utf8.count), sequence.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw AdminValidation.invalid("newCard.panSequenceNumber", "must be 2 or 3 digits")
            }
        }
        let name = try body.newCard.cardholderName.map {
            try AdminValidation.text($0, field: "newCard.cardholderName", maxLength: 128)
        }
        let applyNow: Bool
        switch body.applyAt {
        case nil, "activation"?: applyNow = false
        case "now"?: applyNow = true
        default: throw AdminValidation.invalid("applyAt", "must be activation or now")
        }
        let fraudTokens = body.fraudTokens ?? []
        if reason == .tokenFraud {
            guard (1...100).contains(fraudTokens.count) else {
                throw AdminValidation.invalid("fraudTokens", "must name 1 to 100 tokens of the card for token_fraud")
            }
        } else if !fraudTokens.isEmpty {
            throw AdminValidation.invalid("fraudTokens", "is only taken with the reason token_fraud")
        }
        guard fraudTokens.allSatisfy({ (1...128).contains($0.utf8.count) }) else {
            throw AdminValidation.invalid("fraudTokens", "must hold token references of 1 to 128 characters")
        }
        return Validated(
            reason: reason, newCardID: newCardID, pan: pan, expiration: expiration,
            panSequenceNumber: body.newCard.panSequenceNumber, cardholderName: name, applyNow: applyNow,
            fraudTokens: Array(Set(fraudTokens)).sorted(), notifyWallet: body.notifyWallet ?? true)
    }

    private static func panMustChange(_ reason: ReissueReason) -> Refusal {
        Refusal(
            .invalid, code: "pan_must_change",
            message: "a \(reason.rawValue) reissue needs a new newCard.accountNumber",
            context: ["field": "newCard.accountNumber"])
    }

    /// Starts the reissue of `oldCardID` (and applies it when asked to at once).
    ///
    /// - Returns: The reissue; nil when the card does not exist.
    /// - Throws: 409 `invalid_state` for a closed or replaced card, `reissue_pending` for a card
    ///   with one waiting (or a new card waiting for activation), `pan_in_use` for a new PAN that
    ///   is another card's, `already_exists` for a taken `newCard.cardId`; 400 `pan_must_change`,
    ///   400 `invalid_request` for fraud tokens that are not the card's; what applying throws.
    static func start(
        _ request: Validated, oldCardID: String, actor: String, now: Date, vault: PANVault, keys: ReissueSettings,
        connection: PostgresConnection
    ) throws -> ReissueRecord? {
        guard try connection.query("SELECT 1 FROM cards WHERE card_id = \(oldCardID) FOR UPDATE").first != nil,
            let old = try CardStore.find(oldCardID, connection: connection)
        else { return nil }
        switch old.status {
        case .closed: throw Refusal.invalidState("a closed card cannot be reissued")
        case .replaced:
            throw Refusal.invalidState("a replaced card cannot be reissued; reissue the card that replaced it")
        case .inactive: throw ReissueStore.pending()
        case .active, .lost, .stolen, .blocked: break
        }
        if try ReissueStore.waiting(oldCardID: oldCardID, connection: connection) != nil {
            throw ReissueStore.pending()
        }
        let oldPAN = try CardStore.openPAN(old, vault: vault)
        var panChanged = false
        if let pan = request.pan, pan != oldPAN {
            panChanged = true
            let fingerprint = try vault.fingerprint(pan)
            if try connection.query("SELECT 1 FROM cards WHERE pan_fingerprint = \(fingerprint) LIMIT 1").first != nil {
                throw Refusal(.conflict, code: "pan_in_use", message: "newCard.accountNumber is another card's")
            }
        }
        if request.reason.needsNewPAN, !panChanged { throw panMustChange(request.reason) }
        if !request.fraudTokens.isEmpty {
            let found = try connection.query(
                """
                SELECT count(*)::int8 AS n FROM tokens
                WHERE card_id = \(oldCardID) AND status <> 'deleted' AND token_reference = ANY(\(request.fraudTokens))
                """
            ).first?.decode("n", as: Int64.self)
            guard found == Int64(request.fraudTokens.count) else {
                throw AdminValidation.invalid("fraudTokens", "must name live tokens of this card")
            }
        }
        let new: CardRecord
        do {
            new = try CardStore.insert(
                cardID: request.newCardID, customerID: old.customerID, pan: request.pan ?? oldPAN,
                expiration: request.expiration, cardholderName: request.cardholderName ?? old.cardholderName,
                paymentNetwork: old.paymentNetwork, status: .inactive, localizedDescription: old.localizedDescription,
                country: old.country, now: now, primaryAccountIdentifier: old.primaryAccountIdentifier, vault: vault,
                connection: connection)
        } catch let error as PostgresError where error.code == .uniqueViolation {
            throw Refusal(
                .conflict, code: AdminErrorCode.alreadyExists, message: "a card with this newCard.cardId exists")
        }
        let record = ReissueRecord(
            reissueID: UUID(), reason: request.reason, oldCardID: oldCardID, newCardID: new.cardID,
            applyAt: request.applyNow ? "now" : "activation", notifyWallet: request.notifyWallet,
            panChanged: panChanged,
            panSequenceNumber: request.panSequenceNumber, fraudTokens: request.fraudTokens,
            status: .awaitingActivation)
        try ReissueStore.insert(record, actor: actor, now: now, connection: connection)
        try AuditLog.append(
            actor: actor, action: "card.reissued", subject: "card:\(oldCardID)",
            details: [
                "reissueId": record.reissueID.uuidString.lowercased(), "reason": record.reason.rawValue,
                "newCardId": new.cardID, "newLastFour": new.lastFour, "panChanged": String(panChanged),
                "applyAt": record.applyAt, "fraudTokens": String(request.fraudTokens.count),
            ],
            at: now, connection: connection)
        guard request.applyNow else { return record }
        try apply(record, actor: actor, now: now, vault: vault, keys: keys, connection: connection)
        return try ReissueStore.find(record.reissueID, connection: connection)
    }

    /// Applies a waiting reissue: deletes, moves, the old card `replaced`, the outbox rows.
    ///
    /// - Throws: 422 `mastercard_update_not_configured` / `tsp_account_cert_not_configured` when a
    ///   token must move through a network whose key is not set.
    static func apply(
        _ reissue: ReissueRecord, actor: String, now: Date, vault: PANVault, keys: ReissueSettings,
        connection: PostgresConnection
    ) throws {
        guard let old = try CardStore.find(reissue.oldCardID, connection: connection),
            let new = try CardStore.find(reissue.newCardID, connection: connection)
        else { throw PostgresError(code: .other, message: "a reissue's card is missing") }
        let id = reissue.reissueID.uuidString.lowercased()
        let tokens = try TokenStore.lockLive(cardID: old.cardID, connection: connection)
        let fraud = Set(reissue.fraudTokens)
        let deletes = tokens.filter { $0.awaitingActivation || fraud.contains($0.reference) }
        let moves = tokens.filter { !$0.awaitingActivation && !fraud.contains($0.reference) }

        // Deletes first, so they are queued before anything moves.
        try TokenStore.delete(deletes.map(\.reference), now: now, connection: connection)
        for token in deletes {
            let isFraud = fraud.contains(token.reference)
            try TokenStore.recordEvent(
                .deleted, tokenReference: token.reference, cardID: old.cardID, source: "issuer", at: now, now: now,
                connection: connection)
            try ReissueStore.addToken(
                reissue.reissueID, tokenReference: token.reference, service: token.service, action: "delete",
                resume: false, now: now, connection: connection)
            if token.service == "mdes" {
                try MDESCustomerServicePayload.enqueue(
                    tokenReference: token.reference, change: isFraud ? .reissueTokenFraud : .reissueUnactivated,
                    cardID: old.cardID, occurrence: id, reissueID: id, connection: connection)
            } else {
                try OutboxStore.enqueue(
                    kind: .tsp, dedupKey: "tsp:\(token.reference):delete:\(id)",
                    payload: TSPNotificationPayload(
                        tokenReference: token.reference, action: "delete",
                        reason: isFraud ? "token_fraud" : "card_reissued", cardId: old.cardID, reissueId: id),
                    connection: connection)
            }
        }

        try TokenStore.move(moves.map(\.reference), toCard: new.cardID, now: now, connection: connection)
        for token in moves {
            let resume = token.issuerSuspendedFrom != nil
            if resume {
                try TokenStore.recordEvent(
                    .resumed, tokenReference: token.reference, cardID: new.cardID, source: "issuer", at: now, now: now,
                    connection: connection)
            }
            try ReissueStore.addToken(
                reissue.reissueID, tokenReference: token.reference, service: token.service, action: "move",
                resume: resume, now: now, connection: connection)
        }
        let mastercard = moves.filter { $0.service == "mdes" }
        let others = moves.filter { $0.service != "mdes" }
        if !moves.isEmpty {
            let oldPAN = try CardStore.openPAN(old, vault: vault)
            let newPAN = try CardStore.openPAN(new, vault: vault)
            let account = AccountUpdateData(
                currentAccountPAN: oldPAN.unsafeDigits, newAccountPAN: reissue.panChanged ? newPAN.unsafeDigits : nil,
                expirationDate: new.expiration.compact, sequenceNumber: reissue.panSequenceNumber)
            // The tokens the card's loss or theft suspended: resumed once moved.
            let resumed = { (tokens: [TokenStore.ReissuedToken]) in
                tokens.filter { $0.issuerSuspendedFrom != nil }.map(\.reference)
            }
            if !mastercard.isEmpty {
                try MDESTokenUpdatePayload.enqueue(
                    reissueID: id, newCardID: new.cardID, tokens: mastercard.map(\.reference),
                    resume: resumed(mastercard),
                    account: try sealed(
                        account, to: keys.mastercardKey, missing: "mastercard_update_not_configured",
                        "moving Mastercard tokens needs ISSUERD_MDES_MASTERCARD_CERT"),
                    notifyWallet: reissue.notifyWallet, connection: connection)
            }
            if !others.isEmpty {
                try PANLifecyclePayload.enqueue(
                    PANLifecyclePayload(
                        event: "pan_lifecycle", operation: reissue.panChanged ? "ACCOUNT_UPDATE" : "EXP_DATE_UPDATE",
                        tokenReferences: others.map(\.reference),
                        encryptedAccount: try sealed(
                            account, to: keys.tspKey, missing: "tsp_account_cert_not_configured",
                            "moving tokens at the TSP needs ISSUERD_TSP_ACCOUNT_CERT"),
                        tokenReference: others[0].reference, cardId: new.cardID, previousCardId: old.cardID,
                        reissueId: id, resumeTokens: resumed(others)),
                    connection: connection)
            }
        }
        _ = try CardStore.setStatus(
            old.cardID, to: .replaced, reason: "reissued as \(new.cardID)", actor: actor, now: now,
            connection: connection)
        try ReissueStore.markApplied(reissue.reissueID, now: now, connection: connection)
        try ReissueStore.refreshStatus(reissue.reissueID, now: now, connection: connection)
        try AuditLog.append(
            actor: actor, action: "card.reissue_applied", subject: "card:\(old.cardID)",
            details: [
                "reissueId": id, "newCardId": new.cardID, "tokensMoved": String(moves.count),
                "tokensDeleted": String(deletes.count),
            ],
            at: now, connection: connection)
    }

    /// The new account data sealed to a network's key (field-level, as Mastercard's);
    /// 422 `code` with `message` when that key is not configured.
    private static func sealed(
        _ account: AccountUpdateData, to key: MastercardEncryptionKey?, missing code: String, _ message: String
    ) throws -> EncryptedPayload {
        guard let key else { throw Refusal(.unacceptable, code: code, message: message) }
        return try FieldLevelEncryption.seal(encoding: account, to: key)
    }

    /// `GET /v1/admin/reissues/{reissueId}` and the `202` of the start.
    struct View: Encodable, Sendable {
        var reissueId: String
        var reason: String
        var oldCardId: String
        var newCardId: String
        var status: String
        var tokens: [ReissueStore.TokenView]?
    }

    static func view(_ record: ReissueRecord, tokens: [ReissueStore.TokenView]?) -> View {
        View(
            reissueId: record.reissueID.uuidString.lowercased(), reason: record.reason.rawValue,
            oldCardId: record.oldCardID, newCardId: record.newCardID, status: record.status.rawValue, tokens: tokens)
    }
}
