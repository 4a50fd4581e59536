import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage
import IssuerdWire

@testable import IssuerdAPI

/// The TSP authorization as it was before it took two round trips (main at 8006c3e): one
/// statement per round trip, the token row locked, the card found by fingerprint, the customer,
/// the velocity and the pending push each read on their own. Kept verbatim (its SQL included) as
/// the reference ``TokenizationEquivalenceTests`` compares the two-round-trip path with.
struct SequentialTokenizationReference {
    let context: ServiceContext
    let risk: RiskService

    init(context: ServiceContext) {
        self.context = context
        risk = RiskService(context: context)
    }

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
        try connection.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(\("tsp:\(body.requestId)|\(body.tokenReference)"), 0))")
        if let stored = try Self.tspAnswer(
            requestID: body.requestId, tokenReference: body.tokenReference, connection: connection)
        {
            return (stored, nil)
        }
        if try TokenStore.lock(body.tokenReference, connection: connection) != nil {
            throw APIErrors.invalidState("this tokenReference was already authorized by another request")
        }
        let ruleset = context.rules.current
        let attemptID = UUID.random()
        var record = AttemptRecord(
            attemptID: attemptID, channel: .tsp,
            subject: AttemptSubject(
                deviceID: body.device?.id, tokenReference: body.tokenReference, tokenRequestorID: body.tokenRequestorId,
                tokenizationSource: body.tokenizationSource, requestID: body.requestId),
            rulesetVersion: ruleset.version, facts: facts(body, pan: input.pan), createdAt: now)

        guard let card = try CardStore.find(pan: input.pan, vault: context.vault, connection: connection) else {
            return (try refuse(&record, reason: "card_not_found", values: [:], connection: connection), (.orange, []))
        }
        record.cardID = card.cardID
        record.customerID = card.customerID
        let customer = try CustomerStore.find(card.customerID, connection: connection)
        let assessment = try risk.assess(
            RiskRequest(
                channel: .tsp, card: card, customer: customer, device: body.device, wallet: body.wallet,
                tokenizationSource: input.source,
                tokenRequestorID: body.tokenRequestorId, deviceActiveTokens: body.activeTokenCount, time: now),
            connection: connection)
        record.cardholderNameHash = assessment.cardholderNameHash
        record.inputs = assessment.attributes
        record.features = assessment.features
        let decision = assessment.decision
        record.hits = decision.hits.map(DecisionJSON.hit)
        record.unknowns = decision.unknowns
        record.facts["unresolved"] = .array(decision.unresolved.map(DecisionJSON.hit))
        guard card.expiration == input.expiration else {
            return (
                try refuse(&record, reason: "expiry_mismatch", values: [:], connection: connection),
                (.orange, decision.hits)
            )
        }

        var flow = decision.flow
        var methods = decision.stepUpMethods
        var reasons = DecisionJSON.reasons(decision)
        if flow != .orange,
            let push = try Self.pendingYellowPush(
                cardID: card.cardID, deviceID: body.device?.id,
                since: now.addingTimeInterval(-TokenizationAuthorization.yellowPushWindow),
                connection: connection)
        {
            let pushed = push.allowedMethods.compactMap(StepUpMethods.init(name:)).reduce(into: StepUpMethods()) {
                $0.formUnion($1)
            }
            methods = flow == .yellow ? methods.intersection(pushed) : pushed
            flow = .yellow
            let pushID = push.attemptID.uuidString.lowercased()
            record.hits.append(
                DecisionJSON.pseudoHit(
                    rule: "issuerd.in_app_yellow", outcome: .yellow, reason: "IN_APP_STEP_UP_REQUIRED",
                    values: ["pushAttemptId": .string(pushID)]))
            reasons.append(Reason(rule: "issuerd.in_app_yellow", reason: "IN_APP_STEP_UP_REQUIRED"))
        }
        var activationMethods: [ActivationMethod] = []
        if flow == .yellow {
            activationMethods = TokenizationAuthorization.activationMethods(customer: customer, allowed: methods)
            if activationMethods.isEmpty {
                flow = .orange
                record.hits.append(
                    DecisionJSON.pseudoHit(
                        rule: Invariants.noStepUpMethod, outcome: .orange, reason: "NO_STEP_UP_METHOD_LEFT",
                        values: ["allowed": .array(methods.methodNames.map(JSONValue.string))]))
                reasons.insert(Reason(rule: Invariants.noStepUpMethod, reason: "NO_STEP_UP_METHOD_LEFT"), at: 0)
            }
        }
        record.flow = flow
        record.decision = AttemptDecision(flow)
        record.allowedMethods = flow == .yellow ? methods.methodNames : []
        let response = TokenizationAuthorizeResponse(
            decision: record.decision.rawValue, flow: flow.description, attemptId: attemptID.uuidString.lowercased(),
            reasons: reasons,
            activationMethods: activationMethods)
        let answer = try JSONCoding.decoder.decode(JSONValue.self, from: JSONCoding.encoder.encode(response))
        record.facts["response"] = answer
        try AttemptStore.insert(record, connection: connection)
        if flow != .orange {
            let status: TokenStatusValue = flow == .green ? .active : .pendingVerification
            let inserted =
                try connection.execute(
                    """
                    INSERT INTO tokens (token_reference, card_id, device_id, token_requestor_id, status, attempt_id, created_at, updated_at)
                    VALUES (\(body.tokenReference), \(card.cardID), \(body.device?.id), \(body.tokenRequestorId), \(status.rawValue), \(attemptID), \(now), \(now))
                    ON CONFLICT (token_reference) DO NOTHING
                    """) == 1
            guard inserted else {
                throw APIErrors.invalidState("this tokenReference was already authorized by another request")
            }
            try TokenStore.recordEvent(
                .created, tokenReference: body.tokenReference, cardID: card.cardID, source: "issuer", at: now, now: now,
                connection: connection)
            if status == .active {
                try TokenStore.recordEvent(
                    .activated, tokenReference: body.tokenReference, cardID: card.cardID, source: "issuer", at: now,
                    now: now, connection: connection)
            }
            try AuditLog.append(
                actor: "tsp", action: "token.created", subject: "token:\(body.tokenReference)",
                details: [
                    "cardId": card.cardID, "status": status.rawValue, "attemptId": attemptID.uuidString.lowercased(),
                ], at: now,
                connection: connection)
        }
        return (answer, (flow, decision.hits))
    }

    private func refuse(
        _ record: inout AttemptRecord, reason: String, values: [String: JSONValue], connection: PostgresConnection
    ) throws -> JSONValue {
        record.flow = .orange
        record.decision = .declined
        record.hits.insert(
            DecisionJSON.pseudoHit(rule: reason, outcome: .orange, reason: reason, values: values), at: 0)
        let response = TokenizationAuthorizeResponse(
            decision: "DECLINED", flow: "orange", attemptId: record.attemptID.uuidString.lowercased(),
            reasons: [Reason(rule: reason, reason: reason)], activationMethods: [])
        let answer = try JSONCoding.decoder.decode(JSONValue.self, from: JSONCoding.encoder.encode(response))
        record.facts["response"] = answer
        try AttemptStore.insert(record, connection: connection)
        return answer
    }

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
        if let wallet = body.wallet,
            let encoded = try? JSONCoding.decoder.decode(JSONValue.self, from: JSONCoding.encoder.encode(wallet))
        {
            facts["wallet"] = encoded
        }
        if let count = body.activeTokenCount { facts["activeTokenCount"] = .int(count) }
        return facts
    }

    private static func pendingYellowPush(
        cardID: String, deviceID: String?, since: Date, connection: PostgresConnection
    ) throws -> (attemptID: UUID, allowedMethods: [String])? {
        guard
            let row = try connection.query(
                """
                SELECT a.attempt_id, a.allowed_methods FROM provisioning_attempts a
                WHERE a.card_id = \(cardID) AND a.channel IN ('in_app', 'wallet_extension', 'google_pay') AND a.flow = 'yellow'
                  AND a.decision = 'REQUIRE_ADDITIONAL_AUTHENTICATION' AND a.created_at >= \(since)
                  AND (a.device_id IS NULL OR \(deviceID)::text IS NULL OR a.device_id = \(deviceID))
                  AND NOT EXISTS (
                    SELECT 1 FROM provisioning_attempts t
                    WHERE t.channel = 'tsp' AND t.card_id = a.card_id AND t.created_at > a.created_at
                      AND (a.device_id IS NULL OR t.device_id = a.device_id))
                ORDER BY a.created_at DESC LIMIT 1
                """
            ).first
        else { return nil }
        return (try row.decode("attempt_id"), try row.decode("allowed_methods"))
    }

    private static func tspAnswer(
        requestID: String, tokenReference: String, connection: PostgresConnection
    ) throws -> JSONValue? {
        guard
            let row = try connection.query(
                """
                SELECT facts FROM provisioning_attempts
                WHERE channel = 'tsp' AND request_id = \(requestID) AND token_reference = \(tokenReference)
                ORDER BY created_at LIMIT 1
                """
            ).first
        else { return nil }
        return try AttemptStore.decode(try row.decode("facts", as: PostgresJSON.self))["response"]
    }
}
