import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdMDES
import IssuerdOutbox
import IssuerdPostgres
import IssuerdStorage
import IssuerdWire

/// The token's life as MDES reports it, and the activation codes of its step-up.
extension MDESFlows {
    // MARK: Notify Service Activated

    /// Stores the token (`service = 'mdes'`): its unique reference with the card of the PAN in
    /// the payload, the token's last four digits and expiry, the requestor and device; a token
    /// recorded at Authorize Service becomes active, a deleted one stays deleted.
    func serviceActivated(_ request: MDESNotifyServiceActivatedRequest) throws {
        let data = try tokenizedCardData(request.fundingAccountInfo)
        guard let tokenReference = request.fundingAccountInfo.tokenUniqueReference else {
            throw MDESRequestError.invalidField("fundingAccountInfo.tokenUniqueReference", "is required")
        }
        guard let pan = PrimaryAccountNumber(data.card.account.accountNumber),
            let card = try CardStore.find(pan: pan, vault: context.vault, connection: connection)
        else { throw MDESRequestError("ACCOUNT_NOT_FOUND", "the account in encryptedPayload is not the issuer's") }
        let token = data.token
        let walletJSON = PostgresJSON(rawJSON: request.tokenWalletJSON(tokenData: token))
        let existing = try TokenStore.lock(tokenReference, connection: connection)
        if let existing, existing.cardID != card.cardID {
            throw MDESRequestError("TOKEN_CARD_MISMATCH", "tokenUniqueReference belongs to another account")
        }
        if existing == nil {
            try TokenStore.createActiveMDES(
                tokenReference: tokenReference, cardID: card.cardID, deviceID: request.paymentAppInstanceId,
                tokenRequestorID: request.tokenRequestorId, wallet: walletJSON, now: now, connection: connection)
        } else {
            try TokenStore.activateMDES(
                tokenReference: tokenReference, tokenRequestorID: request.tokenRequestorId, wallet: walletJSON,
                now: now,
                connection: connection)
        }
        let events: [TokenEventKind] =
            existing == nil
            ? [.created, .activated] : existing?.status == .active || existing?.status == .deleted ? [] : [.activated]
        if !events.isEmpty {
            try connection.execute(
                TokenStore.eventsInsertion(
                    events, tokenReference: tokenReference, cardID: card.cardID, source: "mdes",
                    at: ISO8601Text.date(request.tokenActivatedDateTime) ?? now, now: now))
        }
        try AuditLog.append(
            actor: "mdes", action: "token.activated", subject: "token:\(tokenReference)",
            details: ["cardId": card.cardID, "tokenSuffix": String(token.token.suffix(4))], at: now,
            connection: connection)
    }

    // MARK: Notify Token Updated

    /// Applies the reason code to every listed token MDES and issuerd share (an unknown token is
    /// logged and skipped): `STATUS_UPDATE` sets the status (`ACTIVE` active or resumed,
    /// `SUSPENDED`, `DEACTIVATED` deleted, `INACTIVE` back to pending verification);
    /// `DELETED_FROM_CONSUMER_APP` deletes it for the issuer (MDES may keep it a while);
    /// `REDIGITIZATION_COMPLETE` records the new token's last four and expiry;
    /// `FUNDING_ACCOUNT_UPDATE` moves it to the card of the new PAN; the rest are audited only.
    func tokenUpdated(_ request: MDESNotifyTokenUpdatedRequest) throws {
        for entry in request.tokens {
            let reference = entry.tokenUniqueReference
            guard let token = try TokenStore.lock(reference, connection: connection) else {
                logger.notice("MDES token update for an unknown token", ["reason": .string(request.reasonCode.text)])
                continue
            }
            var details = ["reasonCode": request.reasonCode.text, "from": token.status.rawValue]
            var change: (TokenStatusValue, TokenEventKind?)?
            switch request.reasonCode {
            case .statusUpdate:
                switch entry.status {
                case .active?: change = (.active, token.status == .suspended ? .resumed : .activated)
                case .suspended?: change = (.suspended, .suspended)
                case .deactivated?: change = (.deleted, .deleted)
                case .inactive?: change = (.pendingVerification, nil)
                case .unknown?, nil: break
                }
                if let by = entry.suspendedBy { details["suspendedBy"] = by.map(\.text).joined(separator: ",") }
                details["status"] = entry.status?.text ?? ""
            case .deletedFromConsumerApp:
                change = (.deleted, .deleted)
            case .redigitizationComplete:
                var wallet: [String: String] = [:]
                if let expiry = entry.tokenExpiry { wallet["tokenExpiry"] = expiry }
                if let info = entry.fundingAccountInfo {
                    let data = try services.open(
                        info.encryptedPayload, as: MDESFundingAccountData.self, now: now, logger: logger)
                    try data.validate(requireCard: false, requireToken: true)
                    if let new = data.tokenData {
                        wallet["tokenSuffix"] = String(new.token.suffix(4))
                        wallet["tokenExpiry"] = new.expiryMonth + new.expiryYear
                    }
                }
                try mergeWallet(reference, wallet)
                details.merge(wallet) { _, new in new }
            case .fundingAccountUpdate:
                if let info = entry.fundingAccountInfo {
                    let data = try services.open(
                        info.encryptedPayload, as: MDESFundingAccountData.self, now: now, logger: logger)
                    try data.validate(requireCard: false)
                    if let account = data.cardAccountData, let pan = PrimaryAccountNumber(account.accountNumber),
                        let card = try CardStore.find(pan: pan, vault: context.vault, connection: connection),
                        card.cardID != token.cardID
                    {
                        try TokenStore.move(reference, toCard: card.cardID, now: now, connection: connection)
                        details["toCardId"] = card.cardID
                    }
                }
            case .authenticationPerformed, .paymentChannelPreferenceUpdated, .unknown:
                break
            }
            if request.reasonCode == .fundingAccountUpdate || request.reasonCode == .redigitizationComplete {
                try accountUpdated(
                    reference, cardID: token.cardID, reasonCode: request.reasonCode.text, details: &details)
            }
            // A deleted token stays deleted: the update is kept as history only.
            if let (status, event) = change, token.status != .deleted, status != token.status {
                try TokenStore.setStatus(reference, to: status, now: now, connection: connection)
                if let event {
                    try TokenStore.recordEvent(
                        event, tokenReference: reference, cardID: token.cardID, source: "mdes", at: now, now: now,
                        connection: connection)
                }
                details["to"] = status.rawValue
            }
            try AuditLog.append(
                actor: "mdes", action: "token.updated", subject: "token:\(reference)", details: details, at: now,
                connection: connection)
        }
    }

    /// A reissue's move confirmed by MDES; an account update no reissue asked for is recorded in
    /// the audit log and counted (`issuerd_unrequested_account_updates_total`): another system
    /// (the billing updater, Mastercard's portal) changed the token's account.
    private func accountUpdated(
        _ reference: String, cardID: String, reasonCode: String, details: inout [String: String]
    ) throws {
        switch try ReissueStore.confirmMove(tokenReference: reference, now: now, connection: connection) {
        case .confirmed(let reissueID):
            details["reissueId"] = reissueID.lowercasedString
        case .unrequested:
            details["unrequested"] = "true"
            try AuditLog.append(
                actor: "mdes", action: "token.unrequested_account_update", subject: "token:\(reference)",
                details: ["reasonCode": reasonCode, "cardId": cardID], at: now, connection: connection)
            services.unrequestedAccountUpdates.increment(labels: [reasonCode])
            logger.warning(
                "MDES account update for a token no reissue moved",
                ["reason": .string(reasonCode), "cardId": .string(cardID)])
        }
    }

    private func mergeWallet(_ reference: String, _ values: [String: String]) throws {
        guard !values.isEmpty else { return }
        let json = PostgresJSON(rawJSON: String(decoding: MDESMessageDecoder.encode(values), as: UTF8.self))
        try TokenStore.mergeWallet(reference, json, now: now, connection: connection)
    }

    // MARK: Notify Suspicious Events

    /// Records the events for analysts (`GET /v1/admin/mdes/suspicious-events`).
    func suspiciousEvents(_ request: MDESNotifySuspiciousEventsRequest, body: Data) throws {
        try MDESStore.recordSuspiciousEvents(
            requestId: request.requestId, tokenReference: request.tokenUniqueReference, status: request.status.text,
            paymentAppInstanceId: request.paymentAppInstanceId,
            eventsJSON: String(decoding: MDESMessageDecoder.encode(request.events), as: UTF8.self), now: now,
            connection: connection)
        try OutcomeStore.recordNetworkSignal(
            tokenReference: request.tokenUniqueReference,
            note:
                "MDES Notify Suspicious Events \(request.requestId): \(request.status.text), \(request.events.count) event(s)",
            at: now, confirmed: context.configuration.outcomes.networkConfirms, actor: "mdes", now: now,
            connection: connection)
        logger.notice(
            "MDES suspicious events", ["status": .string(request.status.text), "events": .int(request.events.count)])
    }

    // MARK: Activation codes

    /// Deliver Activation Code: the code MDES made is delivered as given, otherwise issuerd makes
    /// one and keeps only its HMAC; either goes out through the step-up outbox (`notify`). A
    /// repeated call while the code is pending re-sends the same message: no new code, no later
    /// expiry, one more send against the hourly limit. `CARDHOLDER_TO_USE_MOBILE_APP` records an
    /// app challenge (nothing is sent).
    func deliverCode(_ request: MDESDeliverActivationCodeRequest) throws {
        guard let method = request.activationMethod.type.stepUpMethod.flatMap(StepUpMethod.init(rawValue:)) else {
            throw MDESRequestError.invalidField("activationMethod.type", "is not a method this issuer offers")
        }
        guard let token = try StepUpToken.lock(request.tokenUniqueReference, connection: connection) else {
            throw MDESRequestError.unknownToken
        }
        guard token.status == StepUpToken.awaitingVerification else {
            throw MDESRequestError("INVALID_TOKEN_STATE", "the token is not awaiting verification")
        }
        if let pending = try connection.query(
            """
            SELECT c.challenge_id, o.dedup_key, o.payload::text AS payload, c.expires_at, c.destination_fingerprint
            FROM challenges c
            JOIN outbox o ON o.dedup_key = 'notify:' || c.challenge_id::text
            WHERE c.token_reference = \(token.tokenReference) AND c.method = \(method.rawValue)
              AND c.status = 'pending' AND c.expires_at > \(now) ORDER BY c.created_at DESC LIMIT 1
            """
        ).first {
            do {
                try services.challenges.enforceSendLimit(token.tokenReference, now: now, connection: connection)
                try services.challenges.enforceCardholderLimit(
                    customerID: token.customerID,
                    destinationFingerprint: try pending.decode("destination_fingerprint", as: [UInt8]?.self), now: now,
                    connection: connection)
            } catch let error as HTTPError {
                throw MDESRequestError("ACTIVATION_METHOD_REFUSED", error.message)
            }
            try resend(
                dedupKey: try pending.decode("dedup_key"), payload: try pending.decode("payload"),
                expiresAt: try pending.decode("expires_at"), requestId: request.requestId)
            try services.challenges.recordResend(
                of: try pending.decode("challenge_id"), tokenReference: token.tokenReference, now: now,
                connection: connection)
            services.stepUpMetrics.record(method: method.rawValue, result: "resent")
            return
        }
        let given = try request.activationCode.map { code -> (code: String, expiresAt: Date) in
            guard let expiry = request.expirationDateTime.flatMap(ISO8601Text.date), expiry > now else {
                throw MDESRequestError.invalidField("expirationDateTime", "has passed")
            }
            return (code, expiry)
        }
        do {
            _ = try services.challenges.issue(
                tokenReference: token.tokenReference, method: method, now: now, connection: connection, given: given,
                actor: "mdes")
        } catch let error as HTTPError {
            throw MDESRequestError("ACTIVATION_METHOD_REFUSED", error.message)
        }
        services.stepUpMetrics.record(method: method.rawValue, result: "sent")
    }

    /// Queues the pending code's message again under a key of its own (a gateway that honours
    /// `Idempotency-Key` would drop a second delivery under the first one's): the same sealed
    /// code, destination and expiry, sealed anew for the new key.
    private func resend(dedupKey: String, payload text: String, expiresAt: Date, requestId: String) throws {
        var payload = try JSONDecoder().decode(StepUpDeliveryPayload.self, from: Data(text.utf8))
        let sealed = try BinaryEncoding.decodeBase64(payload.sealed)
        let secret = try services.sealer.open(.init(keyVersion: payload.keyVersion, bytes: sealed), dedupKey: dedupKey)
        let key = "\(dedupKey):resend:\(requestId)"
        let resealed = try services.sealer.seal(secret, dedupKey: key)
        payload.keyVersion = resealed.keyVersion
        payload.sealed = BinaryEncoding.base64String(resealed.bytes)
        payload.validMinutes = max(1, Int(expiresAt.timeIntervalSince(now) / 60))
        _ = try OutboxStore.enqueue(kind: .notify, dedupKey: key, payload: payload, connection: connection)
    }

    /// Validate Activation Code through the step-up verifier (its attempt limit and lockout):
    /// verified `SUCCESS`, wrong `INCORRECT_CODE`, wrong for the last allowed time or locked
    /// `INCORRECT_CODE_RETRIES_EXCEEDED`, expired or no longer valid `EXPIRED_CODE`.
    func validateCode(_ request: MDESValidateActivationCodeRequest) throws -> MDESValidationResult {
        var method = "unknown"
        let response: ActivationCodeVerifyResponse
        do {
            response = try services.verifier.verify(
                tokenReference: request.tokenUniqueReference, code: request.activationCode, caller: .mdes, now: now,
                connection: connection, notifyTSP: false, method: &method)
        } catch let error as HTTPError where error.status == 404 {
            throw MDESRequestError.unknownToken
        } catch let error as HTTPError where error.status == 409 {
            return .expiredCode
        }
        services.stepUpMetrics.record(method: method, result: response.result)
        switch response.result {
        case "verified": return .success
        case "invalid": return .incorrectCode
        case "locked": return .incorrectCodeRetriesExceeded
        default: return .expiredCode
        }
    }
}
