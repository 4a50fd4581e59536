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
        guard try CardStore.lockStatus(oldCardID, connection: connection) != nil,
            let old = try CardStore.find(oldCardID, connection: connection)
        else { return nil }
        let oldPAN = try CardStore.openPAN(old, vault: vault)
        let panChanged = try check(
            request, old: old, oldPAN: oldPAN,
            waiting: { try ReissueStore.waiting(oldCardID: oldCardID, connection: connection) != nil },
            panInUse: { pan in
                try CardStore.holdsPAN(fingerprint: try vault.fingerprint(pan), connection: connection)
            },
            liveFraudTokens: { references in
                try TokenStore.liveCount(of: references, cardID: oldCardID, connection: connection)
            })
        let new: CardRecord
        do {
            new = try CardStore.insert(
                cardID: request.newCardID, customerID: old.customerID, pan: request.pan ?? oldPAN,
                expiration: request.expiration, cardholderName: request.cardholderName ?? old.cardholderName,
                paymentNetwork: old.paymentNetwork, status: .inactive, localizedDescription: old.localizedDescription,
                country: old.country, now: now, primaryAccountIdentifier: old.primaryAccountIdentifier, vault: vault,
                connection: connection)
        } catch let error as PostgresError where error.code == .uniqueViolation {
            throw alreadyExists()
        }
        let record = self.record(request, oldCardID: oldCardID, panChanged: panChanged)
        try ReissueStore.insert([record], actor: actor, now: now, connection: connection)
        let audit = startedAudit(record, newLastFour: new.lastFour)
        try AuditLog.append(
            actor: actor, action: audit.action, subject: audit.subject, details: audit.details, at: now,
            connection: connection)
        guard request.applyNow else { return record }
        try apply(record, actor: actor, now: now, vault: vault, keys: keys, connection: connection)
        return try ReissueStore.find(record.reissueID, connection: connection)
    }

    /// The checks of a start that need the old card and the database, in this order for one card
    /// (the route) and for each line of a file's chunk (``CardReissueBatch``, which answers the
    /// closures from what it read for the whole chunk).
    ///
    /// - Parameters:
    ///   - waiting: Whether the old card has a reissue waiting for activation.
    ///   - panInUse: Whether a card (any, in service or not) has this PAN.
    ///   - liveFraudTokens: How many of these references are live tokens of the old card.
    /// - Returns: Whether the PAN changes.
    /// - Throws: What ``start(_:oldCardID:actor:now:vault:keys:connection:)`` throws before it writes.
    static func check(
        _ request: Validated, old: CardRecord, oldPAN: PrimaryAccountNumber, waiting: () throws -> Bool,
        panInUse: (PrimaryAccountNumber) throws -> Bool, liveFraudTokens: ([String]) throws -> Int64
    ) throws -> Bool {
        switch old.status {
        case .closed: throw Refusal.invalidState("a closed card cannot be reissued")
        case .replaced:
            throw Refusal.invalidState("a replaced card cannot be reissued; reissue the card that replaced it")
        case .inactive: throw ReissueStore.pending()
        case .active, .lost, .stolen, .blocked: break
        }
        if try waiting() { throw ReissueStore.pending() }
        var panChanged = false
        if let pan = request.pan, pan != oldPAN {
            panChanged = true
            if try panInUse(pan) {
                throw Refusal(.conflict, code: "pan_in_use", message: "newCard.accountNumber is another card's")
            }
        }
        if request.reason.needsNewPAN, !panChanged { throw panMustChange(request.reason) }
        if !request.fraudTokens.isEmpty {
            guard try liveFraudTokens(request.fraudTokens) == Int64(request.fraudTokens.count) else {
                throw AdminValidation.invalid("fraudTokens", "must name live tokens of this card")
            }
        }
        return panChanged
    }

    /// 409 `already_exists`: `newCard.cardId` is taken.
    static func alreadyExists() -> Refusal {
        Refusal(.conflict, code: AdminErrorCode.alreadyExists, message: "a card with this newCard.cardId exists")
    }

    /// The reissue row a start inserts, waiting for activation.
    static func record(_ request: Validated, oldCardID: String, panChanged: Bool) -> ReissueRecord {
        ReissueRecord(
            reissueID: UUID(), reason: request.reason, oldCardID: oldCardID, newCardID: request.newCardID,
            applyAt: request.applyNow ? "now" : "activation", notifyWallet: request.notifyWallet,
            panChanged: panChanged, panSequenceNumber: request.panSequenceNumber, fraudTokens: request.fraudTokens,
            status: .awaitingActivation)
    }

    /// A start's audit entry, `card.reissued`.
    static func startedAudit(
        _ record: ReissueRecord, newLastFour: String
    ) -> (action: String, subject: String, details: [String: String]) {
        (
            "card.reissued", "card:\(record.oldCardID)",
            [
                "reissueId": record.reissueID.lowercasedString, "reason": record.reason.rawValue,
                "newCardId": record.newCardID, "newLastFour": newLastFour, "panChanged": String(record.panChanged),
                "applyAt": record.applyAt, "fraudTokens": String(record.fraudTokens.count),
            ]
        )
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
        let tokens = try TokenStore.lockLive(cardID: old.cardID, connection: connection)
        let application = try application(
            reissue, tokens: tokens, newExpiration: new.expiration, keys: keys,
            pans: { (try CardStore.openPAN(old, vault: vault), try CardStore.openPAN(new, vault: vault)) })
        try write([application], actor: actor, now: now, connection: connection)
    }

    /// What applying a reissue writes, worked out before anything is written.
    struct Application: Sendable {
        var reissue: ReissueRecord
        /// Tokens awaiting activation and the named fraud tokens: deleted, before anything moves.
        var deletes: [TokenStore.ReissuedToken]
        /// Every other live token: moved to the new card.
        var moves: [TokenStore.ReissuedToken]
        /// The deletes' calls, then the move's (Mastercard's `/token/update`, the TSP's
        /// `pan_lifecycle`), in the order they are queued.
        var messages: [OutboxStore.Message]
    }

    /// Works out applying `reissue` to the old card's live `tokens` (locked by the caller).
    ///
    /// - Parameter pans: The old and the new card's PAN, opened only when a token moves.
    /// - Throws: 422 `mastercard_update_not_configured` / `tsp_account_cert_not_configured` when a
    ///   token must move through a network whose key is not set.
    static func application(
        _ reissue: ReissueRecord, tokens: [TokenStore.ReissuedToken], newExpiration: CardExpiration,
        keys: ReissueSettings, pans: () throws -> (old: PrimaryAccountNumber, new: PrimaryAccountNumber)
    ) throws -> Application {
        let id = reissue.reissueID.lowercasedString
        let fraud = Set(reissue.fraudTokens)
        let deletes = tokens.filter { $0.awaitingActivation || fraud.contains($0.reference) }
        let moves = tokens.filter { !$0.awaitingActivation && !fraud.contains($0.reference) }
        var messages: [OutboxStore.Message] = []
        for token in deletes {
            let isFraud = fraud.contains(token.reference)
            if token.service == "mdes" {
                messages.append(
                    try MDESCustomerServicePayload.message(
                        tokenReference: token.reference, change: isFraud ? .reissueTokenFraud : .reissueUnactivated,
                        cardID: reissue.oldCardID, occurrence: id, reissueID: id))
            } else {
                messages.append(
                    try OutboxStore.Message(
                        kind: .tsp, dedupKey: "tsp:\(token.reference):delete:\(id)",
                        payload: TSPNotificationPayload(
                            tokenReference: token.reference, action: "delete",
                            reason: isFraud ? "token_fraud" : "card_reissued", cardId: reissue.oldCardID,
                            reissueId: id)))
            }
        }
        let mastercard = moves.filter { $0.service == "mdes" }
        let others = moves.filter { $0.service != "mdes" }
        if !moves.isEmpty {
            let (oldPAN, newPAN) = try pans()
            let account = AccountUpdateData(
                currentAccountPAN: oldPAN.unsafeDigits, newAccountPAN: reissue.panChanged ? newPAN.unsafeDigits : nil,
                expirationDate: newExpiration.compact, sequenceNumber: reissue.panSequenceNumber)
            // The tokens the card's loss or theft suspended: resumed once moved.
            let resumed = { (tokens: [TokenStore.ReissuedToken]) in
                tokens.filter { $0.issuerSuspendedFrom != nil }.map(\.reference)
            }
            if !mastercard.isEmpty,
                let message = try MDESTokenUpdatePayload.message(
                    reissueID: id, newCardID: reissue.newCardID, tokens: mastercard.map(\.reference),
                    resume: resumed(mastercard),
                    account: try sealed(
                        account, to: keys.mastercardKey, missing: "mastercard_update_not_configured",
                        "moving Mastercard tokens needs ISSUERD_MDES_MASTERCARD_CERT"),
                    notifyWallet: reissue.notifyWallet)
            {
                messages.append(message)
            }
            if !others.isEmpty,
                let message = try PANLifecyclePayload(
                    event: "pan_lifecycle", operation: reissue.panChanged ? "ACCOUNT_UPDATE" : "EXP_DATE_UPDATE",
                    tokenReferences: others.map(\.reference),
                    encryptedAccount: try sealed(
                        account, to: keys.tspKey, missing: "tsp_account_cert_not_configured",
                        "moving tokens at the TSP needs ISSUERD_TSP_ACCOUNT_CERT"),
                    tokenReference: others[0].reference, cardId: reissue.newCardID,
                    previousCardId: reissue.oldCardID, reissueId: id, resumeTokens: resumed(others)
                ).message()
            {
                messages.append(message)
            }
        }
        return Application(reissue: reissue, deletes: deletes, moves: moves, messages: messages)
    }

    /// Writes applications within the caller's transaction, a statement per table whatever their
    /// number (one for the route and an activation, a chunk's for a file): the tokens deleted
    /// and moved with their events and their rows in the reissue, the outbox messages in order,
    /// the old cards `replaced`, each reissue `in_progress` (or `completed` without tokens) and
    /// its `card.reissue_applied` audit entry. `statusInserted`: the reissues were inserted
    /// applied already (``appliedStatus(_:)``), so their status is not updated.
    static func write(
        _ applications: [Application], actor: String, now: Date, statusInserted: Bool = false,
        connection: PostgresConnection
    ) throws {
        guard !applications.isEmpty else { return }
        var events: [(event: TokenEventKind, tokenReference: String, cardID: String)] = []
        var tokens: [ReissueStore.TokenAction] = []
        var moves: [(reference: String, cardID: String)] = []
        for application in applications {
            let reissue = application.reissue
            for token in application.deletes {
                events.append((.deleted, token.reference, reissue.oldCardID))
                tokens.append(
                    .init(
                        reissueID: reissue.reissueID, tokenReference: token.reference, service: token.service,
                        action: "delete", resume: false))
            }
        }
        for application in applications {
            let reissue = application.reissue
            for token in application.moves {
                let resume = token.issuerSuspendedFrom != nil
                if resume { events.append((.resumed, token.reference, reissue.newCardID)) }
                moves.append((token.reference, reissue.newCardID))
                tokens.append(
                    .init(
                        reissueID: reissue.reissueID, tokenReference: token.reference, service: token.service,
                        action: "move", resume: resume))
            }
        }
        // Deletes first, so they are queued before anything moves.
        try TokenStore.delete(applications.flatMap { $0.deletes.map(\.reference) }, now: now, connection: connection)
        try TokenStore.move(moves, now: now, connection: connection)
        try TokenStore.recordEvents(events, source: "issuer", at: now, now: now, connection: connection)
        try ReissueStore.addTokens(tokens, now: now, connection: connection)
        try OutboxStore.enqueue(applications.flatMap(\.messages), connection: connection)
        try CardStore.markReplaced(
            applications.map { ($0.reissue.oldCardID, "reissued as \($0.reissue.newCardID)") }, actor: actor, now: now,
            connection: connection)
        if !statusInserted {
            try ReissueStore.markApplied(applications.map(\.reissue.reissueID), now: now, connection: connection)
        }
        try AuditLog.append(
            actor: actor,
            entries: applications.map { application in
                (
                    "card.reissue_applied", "card:\(application.reissue.oldCardID)",
                    [
                        "reissueId": application.reissue.reissueID.lowercasedString,
                        "newCardId": application.reissue.newCardID, "tokensMoved": String(application.moves.count),
                        "tokensDeleted": String(application.deletes.count),
                    ]
                )
            }, at: now, connection: connection)
    }

    /// The status a reissue has once `application` is written: `in_progress` while a token is to
    /// be deleted or moved, else `completed` (as ``ReissueStore/markApplied(_:now:connection:)``
    /// leaves it).
    static func appliedStatus(_ application: Application) -> ReissueStatus {
        application.deletes.isEmpty && application.moves.isEmpty ? .completed : .inProgress
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
            reissueId: record.reissueID.lowercasedString, reason: record.reason.rawValue,
            oldCardId: record.oldCardID, newCardId: record.newCardID, status: record.status.rawValue, tokens: tokens)
    }
}
