import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres
import IssuerdRisk
import IssuerdWire

/// `POST /v1/tsp/tokenization/authorize`: card by PAN fingerprint → expiry → risk with the
/// wallet signals → decision, activation methods, token, attempt; all in one transaction.
///
/// Rules of this endpoint (documented in docs/openapi.yaml):
/// - **Retries**: the same `requestId` and `tokenReference` get the stored answer, never a
///   second token (a transaction-level advisory lock on the pair serialises concurrent retries).
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

    func authorize(_ request: HTTPRequest, now: Date) throws -> HTTPResponse {
        let input = try TokenizationInput(request.decodeJSON(TokenizationAuthorizeRequest.self))
        let (answer, counted) = try context.database.withConnection { connection in
            try connection.transaction { connection in
                try decide(input, request: request, now: now, connection: connection)
            }
        }
        if let counted { risk.count(channel: "tsp", flow: counted.flow, hits: counted.hits) }
        return try .json(answer)
    }

    private func decide(
        _ input: TokenizationInput, request: HTTPRequest, now: Date, connection: PostgresConnection
    ) throws -> (JSONValue, (flow: Flow, hits: [RuleHit])?) {
        let body = input.body
        try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(\("tsp:\(body.requestId)|\(body.tokenReference)"), 0))")
        if let stored = try AttemptStore.tspAnswer(requestID: body.requestId, tokenReference: body.tokenReference, connection: connection) {
            return (stored, nil)
        }
        if try TokenStore.lock(body.tokenReference, connection: connection) != nil {
            throw APIErrors.invalidState("this tokenReference was already authorized by another request")
        }
        let ruleset = rules
        let attemptID = UUID.random()
        var record = AttemptRecord(
            attemptID: attemptID, channel: "tsp", deviceID: body.device?.id, tokenReference: body.tokenReference,
            tokenRequestorID: body.tokenRequestorId, tokenizationSource: body.tokenizationSource, requestID: body.requestId,
            inputs: [:], features: [:], hits: [], unknowns: [], flow: .orange, decision: "DECLINED", allowedMethods: [],
            rulesetVersion: ruleset.version, facts: facts(body, pan: input.pan), createdAt: now)

        guard let card = try CardStore.find(pan: input.pan, vault: context.vault, connection: connection) else {
            return (try refuse(&record, reason: "card_not_found", values: ["card.bin": .string(input.pan.bin)], connection: connection), (.orange, []))
        }
        record.cardID = card.cardID
        record.customerID = card.customerID
        let customer = try CustomerStore.find(card.customerID, connection: connection)
        let assessment = try risk.assess(
            RiskRequest(
                channel: .tsp, card: card, customer: customer, device: body.device, wallet: body.wallet, tokenizationSource: input.source,
                tokenRequestorID: body.tokenRequestorId, deviceActiveTokens: body.activeTokenCount, time: now),
            connection: connection)
        record.cardholderNameHash = assessment.cardholderNameHash
        record.inputs = assessment.attributes
        record.features = assessment.features
        let decision = assessment.decision
        record.hits = decision.hits.map(DecisionJSON.hit)
        record.unknowns = decision.unknowns
        record.facts["unresolved"] = .array(decision.unresolved.map(DecisionJSON.hit))
        guard card.expiration == input.expiration.slashed else {
            return (try refuse(&record, reason: "expiry_mismatch", values: [:], connection: connection), (.orange, decision.hits))
        }

        var flow = decision.flow
        var methods = decision.stepUpMethods
        var reasons = DecisionJSON.reasons(decision)
        if flow != .orange, let push = try AttemptStore.pendingYellowPush(
            cardID: card.cardID, deviceID: body.device?.id, since: now.addingTimeInterval(-Self.yellowPushWindow), connection: connection)
        {
            let pushed = push.allowedMethods.compactMap(StepUpMethods.init(name:)).reduce(into: StepUpMethods()) { $0.formUnion($1) }
            methods = flow == .yellow ? methods.intersection(pushed) : pushed
            flow = .yellow
            let pushID = push.attemptID.uuidString.lowercased()
            record.hits.append(DecisionJSON.pseudoHit(
                rule: "issuerd.in_app_yellow", outcome: .yellow, reason: "IN_APP_STEP_UP_REQUIRED", values: ["pushAttemptId": .string(pushID)]))
            reasons.append(Reason(rule: "issuerd.in_app_yellow", reason: "IN_APP_STEP_UP_REQUIRED"))
        }
        var activationMethods: [ActivationMethod] = []
        if flow == .yellow {
            activationMethods = Self.activationMethods(customer: customer, allowed: methods)
            if activationMethods.isEmpty {
                flow = .orange
                record.hits.append(DecisionJSON.pseudoHit(
                    rule: Invariants.noStepUpMethod, outcome: .orange, reason: "NO_STEP_UP_METHOD_LEFT",
                    values: ["allowed": .array(methods.methodNames.map(JSONValue.string))]))
                reasons.insert(Reason(rule: Invariants.noStepUpMethod, reason: "NO_STEP_UP_METHOD_LEFT"), at: 0)
            }
        }
        record.flow = flow
        record.decision = flow == .green ? "APPROVED" : flow == .yellow ? "REQUIRE_ADDITIONAL_AUTHENTICATION" : "DECLINED"
        record.allowedMethods = flow == .yellow ? methods.methodNames : []
        let response = TokenizationAuthorizeResponse(
            decision: record.decision, flow: flow.description, attemptId: attemptID.uuidString.lowercased(), reasons: reasons,
            activationMethods: activationMethods)
        let answer = try JSONCoding.decoder.decode(JSONValue.self, from: JSONCoding.encoder.encode(response))
        record.facts["response"] = answer
        try AttemptStore.insert(record, connection: connection)
        if flow != .orange {
            let status: TokenStatusValue = flow == .green ? .active : .pendingVerification
            guard try TokenStore.insert(
                tokenReference: body.tokenReference, cardID: card.cardID, deviceID: body.device?.id, tokenRequestorID: body.tokenRequestorId,
                status: status, attemptID: attemptID, now: now, connection: connection)
            else { throw APIErrors.invalidState("this tokenReference was already authorized by another request") }
            try TokenStore.recordEvent(.created, tokenReference: body.tokenReference, cardID: card.cardID, source: "issuer", at: now, now: now, connection: connection)
            if status == .active {
                try TokenStore.recordEvent(.activated, tokenReference: body.tokenReference, cardID: card.cardID, source: "issuer", at: now, now: now, connection: connection)
            }
            try AuditLog.append(
                actor: "tsp", action: "token.created", subject: "token:\(body.tokenReference)",
                details: ["cardId": card.cardID, "status": status.rawValue, "attemptId": attemptID.uuidString.lowercased()], at: now,
                connection: connection)
        }
        request.logger.info("tokenization decided", ["attemptId": .string(attemptID.uuidString.lowercased()), "flow": .string(flow.description)])
        return (answer, (flow, decision.hits))
    }

    private var rules: Ruleset { context.rules.current }

    /// Records a DECLINED attempt decided before (or beside) the rules, and answers it.
    private func refuse(_ record: inout AttemptRecord, reason: String, values: [String: JSONValue], connection: PostgresConnection) throws -> JSONValue {
        record.flow = .orange
        record.decision = "DECLINED"
        record.hits.insert(DecisionJSON.pseudoHit(rule: reason, outcome: .orange, reason: reason, values: values), at: 0)
        let response = TokenizationAuthorizeResponse(
            decision: "DECLINED", flow: "orange", attemptId: record.attemptID.uuidString.lowercased(),
            reasons: [Reason(rule: reason, reason: reason)], activationMethods: [])
        let answer = try JSONCoding.decoder.decode(JSONValue.self, from: JSONCoding.encoder.encode(response))
        record.facts["response"] = answer
        try AttemptStore.insert(record, connection: connection)
        return answer
    }

    /// The customer's step-up methods that `allowed` permits, destinations masked, stable ids.
    static func activationMethods(customer: CustomerRecord?, allowed: StepUpMethods) -> [ActivationMethod] {
        var methods: [ActivationMethod] = []
        if let phone = customer?.phoneNumber, !phone.isEmpty {
            if allowed.contains(.sms) { methods.append(ActivationMethod(id: "sms-1", type: "sms", value: DestinationMask.phone(phone))) }
            if allowed.contains(.ars) { methods.append(ActivationMethod(id: "ars-1", type: "ars", value: DestinationMask.phone(phone))) }
        }
        if let email = customer?.email, !email.isEmpty, allowed.contains(.email) {
            methods.append(ActivationMethod(id: "email-1", type: "email", value: DestinationMask.email(email)))
        }
        if customer != nil, allowed.contains(.app) { methods.append(ActivationMethod(id: "app-1", type: "app", value: "issuer app")) }
        return methods
    }

    /// The request facts explain needs; the PAN only as its BIN and last four.
    private func facts(_ body: TokenizationAuthorizeRequest, pan: PrimaryAccountNumber) -> [String: JSONValue] {
        var facts: [String: JSONValue] = ["channel": "tsp", "panMasked": .string(pan.masked), "expiration": .string(body.card.expiration)]
        if let device = body.device {
            var object: [String: JSONValue] = [:]
            for (key, value) in [("id", device.id), ("type", device.type), ("name", device.name), ("locale", device.locale), ("ipAddress", device.ipAddress)] {
                if let value { object[key] = .string(value) }
            }
            facts["device"] = .object(object)
        }
        if let wallet = body.wallet, let encoded = try? JSONCoding.decoder.decode(JSONValue.self, from: JSONCoding.encoder.encode(wallet)) {
            facts["wallet"] = encoded
        }
        if let count = body.activeTokenCount { facts["activeTokenCount"] = .int(count) }
        return facts
    }
}
