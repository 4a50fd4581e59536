import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage
import IssuerdWire

/// `POST /v1/tsp/tokenization/authorize`: card by PAN fingerprint → expiry → risk with the
/// wallet signals → decision, activation methods, token, attempt; all in one transaction.
///
/// One transaction on one pooled connection, in two round trips, as the in-app path
/// (``InAppProvisioning``): `BEGIN`, the token reference's advisory lock, one statement reading
/// everything the decision needs (``TokenizationContext``), the signature's replay record
/// (``VerifiedTSPSignature``) and the `Idempotency-Key` claim's lock travel together; the
/// attempt, the token, its events, the audit entry and the claim's answer travel with `COMMIT`.
///
/// Rules of this endpoint (documented in docs/openapi.yaml):
/// - **Retries**: the same `requestId` and `tokenReference` get the stored answer, never a
///   second token (a transaction-level advisory lock on the token reference serialises
///   concurrent retries, and any other request for the same token reference).
/// - **Tokens**: green → `active`, yellow → `pending_verification`, orange → no token row (the
///   attempt keeps the token reference). A token reference already recorded by another request
///   is 409 `invalid_state`.
/// - **Yellow pushes**: a yellow in-app or Wallet-extension push of the card on the same device
///   (or one that sent no device id) in the last 24 hours, not yet followed by a TSP
///   authorization of that card and device, makes this authorization at least yellow
///   (`issuerd.in_app_yellow`), with the push's step-up methods intersected in.
/// - **Activation methods**: `sms` and `ars` when the customer has a phone number, `email` when
///   they have an address, `app` always (every customer can sign in to the issuer app); each only
///   if the decision's step-up methods allow it. No method left makes the decision orange.
struct TokenizationAuthorization: Sendable {
    let context: ServiceContext
    let risk: RiskService
    /// How long a yellow push forces step-up on the TSP authorization that follows it.
    static let yellowPushWindow: TimeInterval = 24 * 3600

    /// What the transaction decided; a refusal is a value so that what the transaction recorded
    /// (the signature, the claim's answer) commits before it is thrown.
    private enum Outcome {
        /// An answer; `decided` for a new decision (counted and logged once committed), nil for
        /// the stored answer of an earlier one.
        case answer(HTTPResponse, decided: Decided?)
        case refusal(HTTPError)
    }

    private struct Decided {
        var attemptID: String
        var flow: Flow
        var hits: [RuleHit]
        /// False for a refusal before the rules' flow is final (unknown card, expiry mismatch),
        /// which the log has never announced.
        var logged: Bool
    }

    /// Decides one request.
    ///
    /// - Parameters:
    ///   - signature: The request's verified signature, recorded in this transaction; a replay is
    ///     401 and does nothing (nil only for in-process callers that checked nothing).
    ///   - claim: The request's `Idempotency-Key` claim: the answer is stored with `COMMIT`, so it
    ///     commits exactly with the attempt, and a holder whose claim a retry took over does nothing.
    func authorize(
        _ request: HTTPRequest, now: Date, signature: VerifiedTSPSignature? = nil, claim: IdempotencyClaim? = nil
    ) throws -> HTTPResponse {
        let input = try TokenizationInput(
            request.decodeJSON(TokenizationAuthorizeRequest.self, fast: TokenizationAuthorizeRequest.init(json:)))
        let body = input.body
        let ruleset = risk.rules.current
        let fingerprint = try context.vault.fingerprint(input.pan)
        let statement = TokenizationContext.statement(
            requestID: body.requestId, tokenReference: body.tokenReference, fingerprint: fingerprint,
            deviceID: body.device?.id,
            velocity: VelocityBatch(
                subject: VelocitySubject(deviceID: body.device?.id), time: now, queries: ruleset.velocityQueries),
            pushesSince: now.addingTimeInterval(-Self.yellowPushWindow))
        var opening = PostgresPipeline(TokenizationContext.lockAndPlanSettings(tokenReference: body.tokenReference))
        let contextRead = opening.append(statement)
        let signatureInserted = signature.map { opening.append($0.insertion()) }
        let claimHeld = claim.map { opening.append($0.holding()) }
        // Sent with COMMIT, so the rows it deletes stay locked only for the commit.
        let pruning = signature == nil ? nil : VerifiedTSPSignature.pruningNowAndThen()
        var answerInTransaction = false
        let outcome: Outcome
        do {
            outcome = try context.database.withConnection { connection in
                try connection.pipelinedTransaction(opening: opening) { _, results in
                    var decided: (value: Outcome, closing: [PostgresQuery])
                    if let signatureInserted, results[signatureInserted].isEmpty {
                        // A replay: the original committed this signature. Nothing is decided, and a
                        // claim this request took goes, so the original's own retry is not answered
                        // with this refusal.
                        decided = (
                            .refusal(VerifiedTSPSignature.replayed(logger: request.logger)),
                            claim.map { [$0.releasing()] } ?? []
                        )
                    } else if let claimHeld, results[claimHeld].isEmpty {
                        // The claim is locked with the context read: a holder whose claim a retry
                        // took over does nothing, and no retry can take it over before this commits.
                        decided = (.refusal(HTTPError(IdempotencyClaim.takenOver())), [])
                    } else {
                        decided = try decide(
                            request, input: input,
                            context: try results[contextRead],
                            ruleset: ruleset, now: now)
                        if let claim {
                            switch decided.value {
                            case .answer(let response, _): decided.closing.append(claim.recording(response))
                            case .refusal(let error):
                                decided.closing.append(claim.recording(error.response(requestId: request.requestId)))
                            }
                            answerInTransaction = true
                        }
                    }
                    return (decided.value, decided.closing + (pruning.map { [$0] } ?? []))
                }
            }
        } catch let error as PostgresError where error.code == .uniqueViolation && error.constraint == "tokens_pkey" {
            // Another request created the token reference after this one read the context (only
            // possible for one that did not take the token reference's lock: an older instance).
            throw APIErrors.invalidState("this tokenReference was already authorized by another request")
        }
        signature?.markDecided()
        if answerInTransaction { claim?.markRecorded() }
        switch outcome {
        case .answer(let response, let decided):
            if let decided {
                risk.count(channel: "tsp", flow: decided.flow, hits: decided.hits)
                if decided.logged {
                    request.logger.info(
                        "tokenization decided",
                        ["attemptId": .string(decided.attemptID), "flow": .string(decided.flow.description)])
                }
            }
            return response
        case .refusal(let error):
            throw error
        }
    }

    /// The outcome, and the statements to commit with it.
    private func decide(
        _ request: HTTPRequest, input: TokenizationInput, context tsp: TokenizationContext, ruleset: Ruleset, now: Date
    ) throws -> (value: Outcome, closing: [PostgresQuery]) {
        let body = input.body
        if let stored = tsp.storedAnswer {
            return (.answer(Self.httpResponse(stored), decided: nil), [])
        }
        if tsp.tokenTaken {
            return (
                .refusal(APIErrors.invalidState("this tokenReference was already authorized by another request")), []
            )
        }
        let attemptID = UUID.random()
        let tokenization = TokenizationRequest(
            channel: .tsp, attemptID: attemptID,
            subject: AttemptSubject(
                deviceID: body.device?.id, tokenReference: body.tokenReference,
                tokenRequestorID: body.tokenRequestorId, tokenizationSource: body.tokenizationSource,
                requestID: body.requestId),
            facts: facts(body, pan: input.pan), expiration: .some(input.expiration), now: now
        ) { card, customer, cardActiveTokens in
            RiskRequest(
                channel: .tsp, card: card, customer: customer, device: body.device, wallet: body.wallet,
                tokenizationSource: input.source, tokenRequestorID: body.tokenRequestorId,
                deviceActiveTokens: body.activeTokenCount, cardActiveTokens: cardActiveTokens, time: now)
        }
        let decided = try TokenizationDecision.decide(tokenization, context: tsp, ruleset: ruleset, risk: risk)
        var record = decided.record
        let attemptText = attemptID.lowercasedString
        // A refusal by a check names only that check.
        let response = TokenizationAuthorizeResponse(
            decision: decided.attempt.rawValue, flow: decided.flow.description, attemptId: attemptText,
            reasons: decided.refusal.map { [Reason(rule: $0.ruleID, reason: $0.reason)] } ?? decided.reasons,
            activationMethods: decided.flow == .yellow
                ? Self.activationMethods(customer: decided.customer, allowed: decided.stepUpMethods) : [])
        let answer = response.jsonValue
        record.facts["response"] = answer
        var closing = [AttemptStore.insertion(record)]
        if let cardID = record.cardID, decided.refusal == nil, decided.flow != .orange {
            let status: TokenStatusValue = decided.flow == .green ? .active : .pendingVerification
            closing.append(
                TokenStore.creation(
                    tokenReference: body.tokenReference, cardID: cardID, deviceID: body.device?.id,
                    tokenRequestorID: body.tokenRequestorId,
                    status: status, attemptID: attemptID, now: now))
            closing.append(
                TokenStore.eventsInsertion(
                    status == .active ? [.created, .activated] : [.created], tokenReference: body.tokenReference,
                    cardID: cardID,
                    source: "issuer", at: now, now: now))
            closing.append(
                AuditLog.appendQuery(
                    actor: "tsp", action: "token.created", subject: "token:\(body.tokenReference)",
                    details: ["cardId": cardID, "status": status.rawValue, "attemptId": attemptText], at: now))
        }
        return (
            .answer(
                Self.httpResponse(answer),
                decided: Decided(
                    attemptID: attemptText, flow: decided.flow, hits: decided.countedHits,
                    logged: decided.refusal == nil)),
            closing
        )
    }

    /// `inputs` with the request's checks as its `checks` member, which every replay reads with
    /// the attributes (docs/rules.md, "What a replay decides").
    static func inputs(_ attributes: AttemptDocument, checks: RequestChecks) -> AttemptDocument {
        switch attributes {
        case .written(let text):
            // Less the object's closing brace, its last byte; joined as Strings. (By characters, a
            // Substring's `dropLast` and `+` count the document's characters from its start.)
            let open = String(Substring(text.utf8.dropLast()))
            return .written(open + (open.utf8.count > 1 ? "," : "") + #""checks":"# + checks.jsonText + "}")
        case .members(var members):
            members["checks"] = DecisionJSON.checks(checks)
            return .members(members)
        }
    }

    /// The step-up methods `customer` can receive (``activationMethods(customer:allowed:)``'s
    /// rule): `sms` and `ars` with a phone number, `email` with an address, `app` for any customer.
    static func reachableMethods(customer: CustomerRecord?) -> StepUpMethods {
        var methods = StepUpMethods()
        if let phone = customer?.phoneNumber, !phone.isEmpty { methods.formUnion([.sms, .ars]) }
        if let email = customer?.email, !email.isEmpty { methods.formUnion(.email) }
        if customer != nil { methods.formUnion(.app) }
        return methods
    }

    /// The customer's step-up methods that `allowed` permits, destinations masked, stable ids.
    static func activationMethods(customer: CustomerRecord?, allowed: StepUpMethods) -> [ActivationMethod] {
        var methods: [ActivationMethod] = []
        if let phone = customer?.phoneNumber, !phone.isEmpty {
            if allowed.contains(.sms) {
                methods.append(ActivationMethod(id: "sms-1", type: "sms", value: DestinationMask.phone(phone)))
            }
            if allowed.contains(.ars) {
                methods.append(ActivationMethod(id: "ars-1", type: "ars", value: DestinationMask.phone(phone)))
            }
        }
        if let email = customer?.email, !email.isEmpty, allowed.contains(.email) {
            methods.append(ActivationMethod(id: "email-1", type: "email", value: DestinationMask.email(email)))
        }
        if customer != nil, allowed.contains(.app) {
            methods.append(ActivationMethod(id: "app-1", type: "app", value: "issuer app"))
        }
        return methods
    }

    /// The request facts explain needs; of the card only its last four digits (no BIN, no
    /// expiry: analysts see attempts, and only the last four of a PAN may reach them).
    private func facts(_ body: TokenizationAuthorizeRequest, pan: PrimaryAccountNumber) -> [String: JSONValue] {
        var facts: [String: JSONValue] = ["channel": "tsp", "lastFour": .string(pan.lastFour)]
        if let device = body.device {
            var object: [String: JSONValue] = [:]
            for (key, value) in [
                ("id", device.id), ("type", device.type), ("name", device.name), ("locale", device.locale),
                ("ipAddress", device.ipAddress),
            ] {
                if let value { object[key] = .string(value) }
            }
            facts["device"] = .object(object)
        }
        if let wallet = body.wallet { facts["wallet"] = wallet.jsonValue }
        if let count = body.activeTokenCount { facts["activeTokenCount"] = .int(count) }
        return facts
    }
}
