import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdMDES
import IssuerdPostgres
import IssuerdRisk
import IssuerdService
import IssuerdStorage
import IssuerdWire

/// One MDES operation inside ``MDESIssuerServices``'s transaction (its answer is stored with it).
struct MDESFlows {
    let services: MDESIssuerServices
    let connection: PostgresConnection
    let now: Date
    let logger: Logger
    var context: ServiceContext { services.context }

    typealias Answer = MDESIssuerServices.Answer

    func run(_ operation: MDESOperation, body: Data, responseId: String) throws -> Answer {
        switch operation {
        case .authorizeService:
            let request = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: body)
            try request.validate()
            return .ok(try authorize(request, responseId: responseId))
        case .requestActivationMethods:
            let request = try MDESMessageDecoder.decode(MDESRequestActivationMethodsRequest.self, from: body)
            try request.validate()
            return .ok(try activationMethods(request, responseId: responseId))
        case .notifyServiceActivated:
            let request = try MDESMessageDecoder.decode(MDESNotifyServiceActivatedRequest.self, from: body)
            try request.validate()
            try serviceActivated(request)
        case .notifyTokenUpdated:
            let request = try MDESMessageDecoder.decode(MDESNotifyTokenUpdatedRequest.self, from: body)
            try request.validate()
            try tokenUpdated(request)
        case .notifySuspiciousEvents:
            let request = try MDESMessageDecoder.decode(MDESNotifySuspiciousEventsRequest.self, from: body)
            try request.validate()
            try suspiciousEvents(request, body: body)
        case .deliverActivationCode:
            let request = try MDESMessageDecoder.decode(MDESDeliverActivationCodeRequest.self, from: body)
            try request.validate()
            try deliverCode(request)
        case .validateActivationCode:
            let request = try MDESMessageDecoder.decode(MDESValidateActivationCodeRequest.self, from: body)
            try request.validate()
            return .ok(MDESValidateActivationCodeResponse(responseId: responseId, result: try validateCode(request)))
        }
        return .ok(MDESAcknowledgement(responseId: responseId))
    }

    /// The card data of a request's `encryptedPayload`, opened and checked.
    func cardData(_ info: MDESFundingAccountInfo) throws -> MDESCardData {
        try services.open(info.encryptedPayload, as: MDESFundingAccountData.self, now: now, logger: logger)
            .checkedCard()
    }

    /// The same with its token (Notify Service Activated).
    func tokenizedCardData(_ info: MDESFundingAccountInfo) throws -> MDESTokenizedCardData {
        try services.open(info.encryptedPayload, as: MDESFundingAccountData.self, now: now, logger: logger)
            .checkedCardAndToken()
    }

    // MARK: Authorize Service

    /// Authorize Service through the risk engine (docs/networks.md, "Authorize Service"): the card
    /// by keyed PAN fingerprint, the wallet's signals as rule attributes, the request's checks
    /// (card found, expiry, a pending yellow push, reachable methods) recorded for replays; green
    /// `APPROVED`, yellow `REQUIRE_ADDITIONAL_AUTHENTICATION` with the methods the rules allow
    /// (the token then recorded as pending verification under its token unique reference),
    /// orange `DECLINED`. The invariants keep it no more permissive than the wallet.
    func authorize(_ request: MDESAuthorizeServiceRequest, responseId: String) throws -> MDESAuthorizeServiceResponse {
        let data = try cardData(request.fundingAccountInfo)
        let account = data.account
        let ruleset = services.risk.rules.current
        let tokenReference = request.fundingAccountInfo.tokenUniqueReference
        let deviceID = request.paymentAppInstanceId
        let pan = PrimaryAccountNumber(account.accountNumber)
        let found: TokenizationContext? = try pan.map { pan in
            let statement = TokenizationContext.statement(
                requestID: request.requestId, tokenReference: tokenReference ?? "",
                fingerprint: try context.vault.fingerprint(pan),
                deviceID: deviceID,
                velocity: VelocityBatch(
                    subject: VelocitySubject(deviceID: deviceID), time: now, queries: ruleset.velocityQueries),
                pushesSince: now.addingTimeInterval(-TokenizationAuthorization.yellowPushWindow))
            // Planned as the TSP authorization's context statement is (one generic plan per
            // connection, B-tree look-ups only), in the same round trip.
            var pipeline: PostgresPipeline = [PushContext.planSettings]
            let contextRead = pipeline.append(statement)
            return try connection.pipeline(pipeline)[contextRead]
        }
        let source = data.source?.ruleName.flatMap(TokenizationSource.init(name:))
        let attemptID = UUID.random()
        var record = AttemptRecord(
            attemptID: attemptID, channel: "mdes", deviceID: deviceID, tokenReference: tokenReference,
            tokenRequestorID: request.tokenRequestorId, tokenizationSource: source?.name, requestID: request.requestId,
            inputs: .members([:]), features: .members([:]), hits: [], unknowns: [], flow: .orange, decision: "DECLINED",
            allowedMethods: [], rulesetVersion: ruleset.version,
            facts: try Self.facts(request.factsJSON(lastFour: String(account.accountNumber.suffix(4)))), createdAt: now)
        let services = request.services.filter(\.isKnown)
        var answer = MDESAuthorizeServiceResponse(
            responseId: responseId, decision: .declined, services: services, cvcResponse: .notProcessed)

        guard let found, let card = found.card else {
            let checks = RequestChecks(cardFound: false)
            record.inputs = TokenizationAuthorization.inputs(.members([:]), checks: checks)
            let checked = ruleset.decide(RiskInput(), velocity: [], checks: checks)
            record.hits = checked.decision.hits.map { DecisionJSON.pseudoHit($0) }
            return try finish(&record, answer: answer, hits: [])
        }
        record.cardID = card.cardID
        record.customerID = card.customerID
        let customer = found.customer
        let decisioning = request.walletProviderDecisioningInfo
        let riskRequest = RiskRequest(
            channel: .mdes, card: card, customer: customer,
            device: request.deviceInfo.map {
                DeviceInfo(id: deviceID, type: $0.ruleDeviceType, name: $0.deviceName, osVersion: $0.osVersion)
            },
            wallet: decisioning.map {
                WalletSignals(
                    deviceScore: MDESWalletProviderDecisioningInfo.score($0.deviceScore),
                    accountScore: MDESWalletProviderDecisioningInfo.score($0.accountScore),
                    phoneNumberScore: MDESWalletProviderDecisioningInfo.score($0.phoneNumberScore),
                    recommendedDecision: $0.recommendedDecision?.isKnown == true ? $0.recommendedDecision?.text : nil,
                    reasonCodes: $0.recommendationReasons)
            },
            tokenizationSource: source, tokenRequestorID: request.tokenRequestorId,
            deviceActiveTokens: request.activeTokenCount.flatMap { Int($0) }, cardActiveTokens: found.cardActiveTokens,
            time: now,
            mdes: RiskRequest.MDESSignals(
                tokenType: request.tokenType.text, walletID: request.walletId, accountIDHash: request.accountIdHash,
                accountLifetime: decisioning?.accountLifeTime.flatMap { Int($0) },
                formFactor: request.deviceInfo?.formFactor, osName: request.deviceInfo?.osName,
                storageTechnology: request.deviceInfo?.storageTechnology))
        // A card without an expiry on the wire (MDES allows it) is not checked; one sent must match.
        var expiryMatches = true
        if let month = account.expiryMonth, let year = account.expiryYear {
            expiryMatches = card.expiration == "\(month)/\(year)"
        }
        let checks = RequestChecks(
            expiryMatches: expiryMatches,
            pendingPush: found.pendingPush.map { push in
                RequestChecks.PendingPush(
                    attemptID: push.attemptID.uuidString.lowercased(),
                    methods: push.allowedMethods.compactMap(StepUpMethods.init(name:)).reduce(into: StepUpMethods()) {
                        $0.formUnion($1)
                    })
            },
            reachableMethods: TokenizationAuthorization.reachableMethods(customer: customer))
        let assessment = try self.services.risk.assess(
            riskRequest, ruleset: ruleset, velocity: found.velocity, checks: checks)
        record.cardholderNameHash = assessment.cardholderNameHash
        record.inputs = TokenizationAuthorization.inputs(assessment.attributes, checks: checks)
        record.features = assessment.features
        record.unknowns = assessment.decision.unknowns
        record.unresolved = assessment.decision.unresolved
        let decision = assessment.checked.decision
        record.hits = decision.hits.map { $0.isCheck ? DecisionJSON.pseudoHit($0) : DecisionJSON.hit($0) }
        guard assessment.checked.refusal == nil else {
            return try finish(&record, answer: answer, hits: assessment.decision.hits)
        }
        record.flow = decision.flow
        switch decision.flow {
        case .green:
            answer.decision = .approved
        case .yellow:
            answer.decision = .requireAdditionalAuthentication
            record.allowedMethods = decision.stepUpMethods.methodNames
            answer.activationMethods = Self.activationMethods(customer: customer, allowed: decision.stepUpMethods)
        case .orange:
            break
        }
        record.decision = answer.decision.text
        let answered = try finish(&record, answer: answer, hits: assessment.decision.hits)
        // The token awaits step-up under its unique reference (Request Activation Methods,
        // Deliver and Validate Activation Code find it there); after its attempt (foreign key).
        // Its history starts with `created`, as a yellow TSP token's does.
        if decision.flow == .yellow, let tokenReference {
            let inserted = try TokenStore.createPendingMDES(
                tokenReference: tokenReference, cardID: card.cardID, deviceID: deviceID,
                tokenRequestorID: request.tokenRequestorId, wallet: PostgresJSON(rawJSON: request.tokenWalletJSON),
                attemptID: attemptID, now: now, connection: connection)
            if inserted {
                try TokenStore.recordEvent(
                    .created, tokenReference: tokenReference, cardID: card.cardID, source: "mdes", at: now, now: now,
                    connection: connection)
            }
        }
        return answered
    }

    /// Records the attempt with its answer and counts the decision.
    private func finish(
        _ record: inout AttemptRecord, answer: MDESAuthorizeServiceResponse, hits: [RuleHit]
    ) throws -> MDESAuthorizeServiceResponse {
        if answer.decision == .declined {
            record.flow = .orange
            record.decision = "DECLINED"
            record.allowedMethods = []
        }
        record.facts["response"] = (try? Self.tree(MDESMessageDecoder.encode(answer))) ?? .null
        try connection.execute(AttemptStore.insertion(record))
        services.risk.count(channel: "mdes", flow: record.flow, hits: hits)
        logger.info(
            "MDES authorization decided",
            ["attemptId": .string(record.attemptID.uuidString.lowercased()), "flow": .string(record.flow.description)])
        return answer
    }

    /// The step-up methods as MDES activation methods (SMS, e-mail, ARS, the issuer app), masked.
    static func activationMethods(customer: CustomerRecord?, allowed: StepUpMethods) -> [MDESActivationMethod] {
        TokenizationAuthorization.activationMethods(customer: customer, allowed: allowed).compactMap { method in
            MDESActivationMethodType(stepUpMethod: method.type).map {
                MDESActivationMethod(type: $0, value: String(method.value.prefix(64)))
            }
        }
    }

    /// An attempt's facts from their JSON text.
    static func facts(_ json: Data) throws -> [String: JSONValue] {
        guard case .object(let members) = try tree(json) else { return [:] }
        return members
    }

    /// JSON text issuerd itself encoded, as a tree: the one-pass parser (Foundation's decoder into
    /// `JSONValue` was 6 % of an Authorize Service's CPU under perf), Foundation's when it declines.
    static func tree(_ json: Data) throws -> JSONValue {
        if let parsed = json.withUnsafeBytes({ JSONValue.parse(bytes: $0.bindMemory(to: UInt8.self)) }) {
            return parsed
        }
        return try JSONDecoder().decode(JSONValue.self, from: json)
    }

    // MARK: Request Activation Methods

    /// The methods of the token's pending step-up: those its attempt allowed that the customer
    /// can receive; `[]` when the card data does not verify or no token awaits verification.
    func activationMethods(
        _ request: MDESRequestActivationMethodsRequest, responseId: String
    ) throws -> MDESRequestActivationMethodsResponse {
        let data = try cardData(request.fundingAccountInfo)
        let none = MDESRequestActivationMethodsResponse(responseId: responseId, activationMethods: [])
        guard let tokenReference = request.fundingAccountInfo.tokenUniqueReference,
            let pan = PrimaryAccountNumber(data.account.accountNumber),
            let token = try StepUpToken.lock(tokenReference, connection: connection),
            token.status == StepUpToken.awaitingVerification,
            let card = try connection.query(
                "SELECT expiration, pan_fingerprint FROM cards WHERE card_id = \(token.cardID)"
            ).first,
            try card.decode("pan_fingerprint", as: [UInt8].self) == (try context.vault.fingerprint(pan))
        else { return none }
        if let month = data.account.expiryMonth, let year = data.account.expiryYear,
            try card.decode("expiration", as: String.self) != "\(month)/\(year)"
        {
            return none
        }
        let customer = try CustomerStore.find(token.customerID, connection: connection)
        let allowed = (token.allowedMethods ?? []).compactMap(StepUpMethods.init(name:)).reduce(into: StepUpMethods()) {
            $0.formUnion($1)
        }
        return MDESRequestActivationMethodsResponse(
            responseId: responseId, activationMethods: Self.activationMethods(customer: customer, allowed: allowed))
    }
}
