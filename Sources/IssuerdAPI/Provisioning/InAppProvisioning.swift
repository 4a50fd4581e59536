import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage
import IssuerdWire

/// `POST /v1/cards/{cardId}/apple-pay/provision`: card → bounds → rate limits → risk →
/// (orange: 403) → chain → payload, seal, activation data → 200, the attempt stored in every
/// decided case (orange, chain invalid, green, yellow).
///
/// One transaction on one pooled connection, in two round trips: a transaction-level advisory
/// lock per customer and one statement reading everything the decision needs (``PushContext``)
/// travel together; the attempt's `INSERT` travels with the commit (the pipeline's implicit
/// transaction, ``PostgresConnection/pipelinedTransaction(isolation:opening:_:file:line:)``). The lock
/// makes the PostgreSQL-counted rate limits and velocity exact under concurrent requests and
/// on every instance: the reading statement takes its snapshot once the lock is held. The
/// decision and the crypto in between cost well under a millisecond.
struct InAppProvisioning: Sendable {
    let context: ServiceContext
    let risk: RiskService

    /// What the transaction decided; errors leave it as values so that the attempt commits
    /// before the error answer is thrown, and the log line is written only once it has.
    enum Outcome {
        case answer(HTTPResponse, channel: String, flow: Flow, hits: [RuleHit], log: LogLine)
        case refusal(HTTPError, counted: (channel: String, flow: Flow, hits: [RuleHit])?, log: LogLine?)
    }

    struct LogLine {
        var level: LogLevel
        var message: String
        var metadata: LogMetadata
    }

    /// Handles one request for the authenticated `customerID`.
    ///
    /// - Parameter claim: The request's `Idempotency-Key` claim: a decided answer (200, or the
    ///   403/422 that records an attempt) is stored with the attempt's `COMMIT`, so the attempt
    ///   and its answer commit together, and a retry after a lost acknowledgement is replayed.
    func provision(
        _ request: HTTPRequest, customerID: String, cardID: String, now: Date, claim: IdempotencyClaim? = nil
    ) throws -> HTTPResponse {
        let input = try validated(cardID: cardID, customerID: customerID) {
            try ProvisioningInput(
                request.decodeJSON(ProvisioningRequest.self, fast: ProvisioningRequest.init(json:)),
                rsaEnabled: context.crypto.rsaV2 != nil)
        }
        var facts: [String: JSONValue] = ["scheme": .string(input.scheme.rawValue)]
        if let device = input.device { facts["device"] = Self.deviceFacts(device) }
        return try push(
            request, customerID: customerID, cardID: cardID, now: now, claim: claim,
            push: Push(channel: input.channel, device: input.device, facts: facts, wallet: "Apple Pay")
        ) { approval, record in
            try appleAnswer(approval, input: input, record: &record, now: now)
        }
    }

    /// A body validated by `body`; when it is refused, another customer's card is 404 whatever
    /// the body said.
    func validated<Input>(cardID: String, customerID: String, _ body: () throws -> Input) throws -> Input {
        do {
            return try body()
        } catch {
            let card = try context.database.withConnection {
                try CardStore.find(cardID, ownedBy: customerID, connection: $0)
            }
            guard card != nil else { throw APIErrors.cardNotFound() }
            throw error
        }
    }

    /// What one wallet's push request says beside its card.
    struct Push {
        var channel: RequestChannel
        var device: DeviceInfo?
        /// The request facts explain needs (never a PAN, nonce or certificate).
        var facts: [String: JSONValue]
        /// The wallet a refusal names (`Apple Pay`, `Google Pay`).
        var wallet: String
    }

    /// A green or yellow decision, handed to the wallet's answer.
    struct Approval {
        var card: CardRecord
        var customer: CustomerRecord?
        var decision: RiskDecision
        var attemptID: String
        var reasons: [Reason]
    }

    /// The transaction every push shares (lock, context, rate limits, decision, attempt, the
    /// `Idempotency-Key` answer); `answer` builds the wallet's payload for a green or yellow
    /// decision and may set the attempt's `decision` and facts.
    func push(
        _ request: HTTPRequest, customerID: String, cardID: String, now: Date, claim: IdempotencyClaim?, push: Push,
        answer: (Approval, inout AttemptRecord) throws -> Outcome
    ) throws -> HTTPResponse {
        let ruleset = risk.rules.current
        let subject = VelocitySubject(cardID: cardID, deviceID: push.device?.id, customerID: customerID)
        let statement = PushContext.statement(
            cardID: cardID, customerID: customerID,
            velocity: VelocityBatch(subject: subject, time: now, queries: ruleset.velocityQueries),
            customerWindow: context.configuration.rateLimitCustomer.window,
            cardWindow: context.configuration.rateLimitCard.window, now: now)
        var answerInTransaction = false
        var opening = PostgresPipeline(PushContext.lockAndPlanSettings(customerID: customerID))
        let contextRead = opening.append(statement)
        let claimHeld = claim.map { opening.append($0.holding()) }
        let outcome = try context.database.withConnection { connection in
            try connection.pipelinedTransaction(opening: opening) { connection, results in
                // The claim is locked with the context read: a holder whose claim a retry took
                // over does nothing, and no retry can take it over before this commits.
                if let claimHeld, results[claimHeld].isEmpty {
                    return (
                        value: Outcome.refusal(HTTPError(IdempotencyClaim.takenOver()), counted: nil, log: nil),
                        closing: []
                    )
                }
                guard let pushContext = try results[contextRead] else {
                    return (value: Outcome.refusal(APIErrors.cardNotFound(), counted: nil, log: nil), closing: [])
                }
                if let refusal = try rateLimit(pushContext, now: now, connection: connection) {
                    return (.refusal(refusal, counted: nil, log: nil), [])
                }
                var decided = try decide(
                    request, push: push, pushContext: pushContext, ruleset: ruleset, now: now, answer: answer)
                if let claim {
                    switch decided.value {
                    case .answer(let response, _, _, _, _): decided.closing.append(claim.recording(response))
                    case .refusal(let error, _, _):
                        decided.closing.append(claim.recording(error.response(requestId: request.requestId)))
                    }
                    answerInTransaction = true
                }
                return decided
            }
        }
        if answerInTransaction { claim?.markRecorded() }
        switch outcome {
        case .answer(let response, let channel, let flow, let hits, let log):
            risk.count(channel: channel, flow: flow, hits: hits)
            request.logger.log(log.level, log.message, log.metadata)
            return response
        case .refusal(let error, let counted, let log):
            if let counted { risk.count(channel: counted.channel, flow: counted.flow, hits: counted.hits) }
            if let log { request.logger.log(log.level, log.message, log.metadata) }
            throw error
        }
    }

    /// The outcome, and the statements to commit with it (the attempt, when one is recorded).
    private func decide(
        _ request: HTTPRequest, push: Push, pushContext: PushContext, ruleset: Ruleset, now: Date,
        answer: (Approval, inout AttemptRecord) throws -> Outcome
    ) throws -> (value: Outcome, closing: [PostgresQuery]) {
        let card = pushContext.card
        let riskRequest = RiskRequest(
            channel: push.channel, card: card, customer: pushContext.customer, device: push.device,
            cardActiveTokens: pushContext.cardActiveTokens, time: now)
        let assessment = try risk.assess(riskRequest, ruleset: ruleset, velocity: pushContext.velocity)
        // A push (in-app, Wallet extension, Google Pay) checks nothing beside the rules.
        let decision = assessment.checked.decision
        let attemptID = UUID.random()
        let attemptText = attemptID.lowercasedString
        let reasons = DecisionJSON.reasons(decision)
        let channel = push.channel.name
        var facts = push.facts
        facts["channel"] = .string(channel)
        facts["shadowFlow"] = .string(decision.shadowFlow.description)
        var record = AttemptRecord(
            attemptID: attemptID, channel: push.channel,
            subject: AttemptSubject(
                cardID: card.cardID, customerID: card.customerID, deviceID: push.device?.id,
                requestID: request.requestId),
            rulesetVersion: decision.rulesetVersion, facts: facts, createdAt: now)
        record.cardholderNameHash = assessment.cardholderNameHash
        record.inputs = assessment.attributes
        record.features = assessment.features
        record.ruleHits = decision.hits
        record.unknowns = decision.unknowns
        record.unresolved = decision.unresolved
        record.flow = decision.flow
        record.decision = AttemptDecision(decision.flow)
        record.allowedMethods = decision.stepUpMethods.methodNames
        let counted = (channel: channel, flow: decision.flow, hits: decision.hits)

        if decision.flow == .orange {
            let log = LogLine(
                level: .info, message: "provisioning declined",
                metadata: ["attemptId": .string(attemptText), "cardId": .string(card.cardID)])
            let reasonJSON: [JSONValue] = reasons.map { ["rule": .string($0.rule), "reason": .string($0.reason)] }
            return (
                .refusal(
                    DecisionErrors.declined(attemptID: attemptText, reasons: reasonJSON, wallet: push.wallet),
                    counted: counted, log: log),
                [AttemptStore.insertion(record)]
            )
        }
        let outcome = try answer(
            Approval(
                card: card, customer: pushContext.customer, decision: decision, attemptID: attemptText, reasons: reasons
            ), &record)
        return (outcome, [AttemptStore.insertion(record)])
    }

    /// Apple's answer: the chain verified (422 and a recorded attempt when it does not), the pass
    /// payload sealed to its leaf, the network's activation data.
    private func appleAnswer(
        _ approval: Approval, input: ProvisioningInput, record: inout AttemptRecord, now: Date
    ) throws -> Outcome {
        let (card, decision, attemptText) = (approval.card, approval.decision, approval.attemptID)
        let counted = (channel: record.channel.name, flow: decision.flow, hits: decision.hits)

        let chain: ValidatedAppleChain
        switch context.crypto.chainVerifier.verify(encoded: input.certificates, at: now, for: input.scheme) {
        case .invalid(let failure):
            record.decision = .certificateChainInvalid
            record.facts["chainFailure"] = ["code": .string(failure.code.rawValue), "detail": .string(failure.detail)]
            let log = LogLine(
                level: .notice, message: "certificate chain refused",
                metadata: ["attemptId": .string(attemptText), "check": .string(failure.code.rawValue)])
            return .refusal(
                DecisionErrors.chainInvalid(detail: failure.code.rawValue, attemptID: attemptText),
                counted: counted, log: log)
        case .valid(let validated):
            chain = validated
        }

        let sealed = try seal(card: card, input: input, chain: chain, now: now)
        let response = ProvisioningResponse(
            encryptedPassData: BinaryEncoding.base64String(sealed.encryptedPassData),
            activationData: BinaryEncoding.base64String(sealed.activationData),
            ephemeralPublicKey: sealed.ephemeralPublicKey.map(BinaryEncoding.base64String),
            wrappedKey: sealed.wrappedKey.map(BinaryEncoding.base64String),
            decision: Decision(flow: decision.flow.description, attemptId: attemptText, reasons: approval.reasons))
        let log = LogLine(
            level: .info, message: "provisioning answered",
            metadata: ["attemptId": .string(attemptText), "flow": .string(decision.flow.description)])
        return .answer(
            response.httpResponse, channel: record.channel.name, flow: decision.flow, hits: decision.hits, log: log)
    }

    /// 429 when the customer or the card used up its window (counted over every push channel).
    private func rateLimit(_ pushContext: PushContext, now: Date, connection: PostgresConnection) throws -> HTTPError? {
        let limits: [(RateLimitSubject, String, Int, RateLimit)] = [
            (
                .customer, pushContext.card.customerID, pushContext.customerRecent,
                context.configuration.rateLimitCustomer
            ),
            (.card, pushContext.card.cardID, pushContext.cardRecent, context.configuration.rateLimitCard),
        ]
        for (subject, id, recent, limit) in limits where recent >= limit.count {
            // The window frees a slot when its oldest attempt leaves it.
            let since = now.addingTimeInterval(-limit.window)
            let oldest = try AttemptStore.oldestRecentPush(
                column: subject, id: id, since: since, connection: connection)
            let retry = (oldest ?? now).addingTimeInterval(limit.window).timeIntervalSince(now)
            return APIErrors.rateLimited(
                retryAfter: Int(retry.rounded(.up)), message: "too many provisioning requests; retry later")
        }
        return nil
    }

    private struct Sealed {
        var encryptedPassData: [UInt8]
        var ephemeralPublicKey: [UInt8]?
        var wrappedKey: [UInt8]?
        var activationData: [UInt8]
    }

    /// The pass payload sealed to the verified leaf, and the network's activation data.
    private func seal(
        card: CardRecord, input: ProvisioningInput, chain: ValidatedAppleChain, now: Date
    ) throws -> Sealed {
        let pan = try CardStore.openPAN(card, vault: context.vault)
        let payload = try PassPayload(
            primaryAccountNumber: pan, expiration: card.expiration, name: card.cardholderName, nonce: input.nonce,
            nonceSignature: input.nonceSignature)
        let activation = try context.crypto.activationProvider(network: card.paymentNetwork).activationData(
            for: ActivationDataRequest(
                primaryAccountNumber: pan, expiration: card.expiration, cardReference: card.cardID, nonce: input.nonce,
                now: now))
        switch input.scheme {
        case .eccV2:
            let output = try context.crypto.eccV2.seal(payload, to: chain)
            return Sealed(
                encryptedPassData: output.encryptedPassData, ephemeralPublicKey: output.ephemeralPublicKey,
                activationData: activation)
        case .rsaV2:
            guard let rsa = context.crypto.rsaV2 else { throw DecisionErrors.schemeUnsupported("RSA_V2") }
            let output = try rsa.seal(payload, to: chain)
            return Sealed(
                encryptedPassData: output.encryptedPassData, wrappedKey: output.wrappedKey, activationData: activation)
        }
    }

    /// The device as explain shows it (what the caller sent, nothing more).
    static func deviceFacts(_ device: DeviceInfo) -> JSONValue {
        var object: [String: JSONValue] = [:]
        for (key, value) in [
            ("id", device.id), ("type", device.type), ("model", device.model), ("osVersion", device.osVersion),
            ("locale", device.locale), ("ipAddress", device.ipAddress),
        ] {
            if let value { object[key] = .string(value) }
        }
        return .object(object)
    }
}
