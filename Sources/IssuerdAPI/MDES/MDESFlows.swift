import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdMDES
import IssuerdPostgres
import IssuerdRisk
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
        let found: TokenizationContext? = try PrimaryAccountNumber(account.accountNumber).map { pan in
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
        let decisioning = request.walletProviderDecisioningInfo
        let tokenization = TokenizationRequest(
            channel: .mdes, attemptID: attemptID,
            subject: AttemptSubject(
                deviceID: deviceID, tokenReference: tokenReference, tokenRequestorID: request.tokenRequestorId,
                tokenizationSource: source?.name, requestID: request.requestId),
            facts: try Self.facts(request.factsJSON(lastFour: String(account.accountNumber.suffix(4)))),
            expiration: data.expiration, now: now, network: "mastercard"
        ) { card, customer, cardActiveTokens in
            RiskRequest(
                channel: .mdes, card: card, customer: customer,
                device: request.deviceInfo.map {
                    DeviceInfo(id: deviceID, type: $0.ruleDeviceType, name: $0.deviceName, osVersion: $0.osVersion)
                },
                wallet: decisioning.map {
                    WalletSignals(
                        deviceScore: MDESWalletProviderDecisioningInfo.score($0.deviceScore),
                        accountScore: MDESWalletProviderDecisioningInfo.score($0.accountScore),
                        phoneNumberScore: MDESWalletProviderDecisioningInfo.score($0.phoneNumberScore),
                        recommendedDecision: $0.recommendedDecision?.isKnown == true
                            ? $0.recommendedDecision?.text : nil,
                        reasonCodes: $0.recommendationReasons)
                },
                tokenizationSource: source, tokenRequestorID: request.tokenRequestorId,
                deviceActiveTokens: request.activeTokenCount.flatMap { Int($0) }, cardActiveTokens: cardActiveTokens,
                time: now,
                mdes: RiskRequest.MDESSignals(
                    tokenType: request.tokenType.text, walletID: request.walletId, accountIDHash: request.accountIdHash,
                    accountLifetime: decisioning?.accountLifeTime.flatMap { Int($0) },
                    formFactor: request.deviceInfo?.formFactor, osName: request.deviceInfo?.osName,
                    storageTechnology: request.deviceInfo?.storageTechnology))
        }
        let decided = try TokenizationDecision.decide(
            tokenization, context: found, ruleset: ruleset, risk: services.risk)
        var answer = MDESAuthorizeServiceResponse(
            responseId: responseId, decision: MDESDecision(decided.attempt),
            services: request.services.filter(\.isKnown),
            cvcResponse: .notProcessed)
        if decided.flow == .yellow {
            answer.activationMethods = Self.activationMethods(
                customer: decided.customer, allowed: decided.stepUpMethods)
        }
        var record = decided.record
        record.facts["response"] = (try? Self.tree(MDESMessageDecoder.encode(answer))) ?? .null
        try connection.execute(AttemptStore.insertion(record))
        services.risk.count(channel: RequestChannel.mdes.name, flow: record.flow, hits: decided.countedHits)
        logger.info(
            "MDES authorization decided",
            ["attemptId": .string(attemptID.uuidString.lowercased()), "flow": .string(record.flow.description)])
        // The token awaits step-up under its unique reference (Request Activation Methods,
        // Deliver and Validate Activation Code find it there); after its attempt (foreign key).
        // Its history starts with `created`, as a yellow TSP token's does.
        if decided.flow == .yellow, let tokenReference, let cardID = record.cardID {
            let inserted = try TokenStore.createPendingMDES(
                tokenReference: tokenReference, cardID: cardID, deviceID: deviceID,
                tokenRequestorID: request.tokenRequestorId, wallet: PostgresJSON(rawJSON: request.tokenWalletJSON),
                attemptID: attemptID, now: now, connection: connection)
            if inserted {
                try TokenStore.recordEvent(
                    .created, tokenReference: tokenReference, cardID: cardID, source: "mdes", at: now, now: now,
                    connection: connection)
            }
        }
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
        let allowed = StepUpMethods(names: token.allowedMethods ?? [])
        return MDESRequestActivationMethodsResponse(
            responseId: responseId, activationMethods: Self.activationMethods(customer: customer, allowed: allowed))
    }
}

extension MDESDecision {
    /// The answer to an attempt's decision (a tokenization is never refused for its certificate chain).
    init(_ decision: AttemptDecision) {
        switch decision {
        case .approved: self = .approved
        case .requireAdditionalAuthentication: self = .requireAdditionalAuthentication
        case .declined, .certificateChainInvalid: self = .declined
        }
    }
}
