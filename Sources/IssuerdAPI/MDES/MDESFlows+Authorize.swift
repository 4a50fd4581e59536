import Foundation
import IssuerdCore
import IssuerdMDES
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage
import IssuerdWire

/// Authorize Service through the risk engine (docs/networks.md, "Authorize Service"): the card
/// by keyed PAN fingerprint, the wallet's signals as rule attributes, the request's checks (card
/// found, expiry, a pending yellow push, reachable methods) recorded for replays; green
/// `APPROVED`, yellow `REQUIRE_ADDITIONAL_AUTHENTICATION` with the methods the rules allow (the
/// token then recorded as pending verification under its token unique reference), orange
/// `DECLINED`. The invariants keep it no more permissive than the wallet.
///
/// In three steps, so that the database is read once and written once: ``prepareAuthorize``
/// opens the card data and writes the context statement (nothing read), the context is read
/// (with the pair's lock and stored answer, ``MDESIssuerServices``), and ``decideAuthorize``
/// decides and returns the statements that record the decision.
extension MDESFlows {
    /// What Authorize Service knows before it reads the database.
    struct AuthorizePreparation {
        var data: MDESCardData
        /// The context statement; nil when the account number is no card number (no card found).
        var statement: TokenizationContext.Statement?
    }

    /// A decision, the statements that record it, and what is announced once it is recorded.
    struct AuthorizeDecision {
        var answer: MDESIssuerServices.Answer
        var closing: [PostgresQuery]
        var attemptID: UUID
        var flow: Flow
        var hits: [RuleHit]

        /// Counts and logs the decision (once it is recorded).
        func announce(services: MDESIssuerServices, logger: Logger) {
            services.risk.count(channel: RequestChannel.mdes.name, flow: flow, hits: hits)
            logger.info(
                "MDES authorization decided",
                ["attemptId": .string(attemptID.lowercasedString), "flow": .string(flow.description)])
        }
    }

    /// Opens the request's card data and writes its context statement.
    ///
    /// - Throws: ``MDESRequestError`` when the payload does not open or its card data is malformed.
    static func prepareAuthorize(
        _ request: MDESAuthorizeServiceRequest, services: MDESIssuerServices, now: Date, logger: Logger
    ) throws -> AuthorizePreparation {
        let data = try services.open(
            request.fundingAccountInfo.encryptedPayload, as: MDESFundingAccountData.self, now: now, logger: logger
        ).checkedCard()
        let deviceID = request.paymentAppInstanceId
        let statement = try PrimaryAccountNumber(data.account.accountNumber).map { pan in
            TokenizationContext.statement(
                requestID: request.requestId, tokenReference: request.fundingAccountInfo.tokenUniqueReference ?? "",
                fingerprint: try services.context.vault.fingerprint(pan),
                deviceID: deviceID,
                velocity: VelocityBatch(
                    subject: VelocitySubject(deviceID: deviceID), time: now,
                    queries: services.risk.rules.current.velocityQueries),
                pushesSince: now.addingTimeInterval(-TokenizationAuthorization.yellowPushWindow))
        }
        return AuthorizePreparation(data: data, statement: statement)
    }

    /// Authorize Service on this transaction's connection: the context read with the provisioning
    /// statements' plan settings, then the decision's statements, one by one.
    func authorize(_ request: MDESAuthorizeServiceRequest, responseId: String) throws -> Answer {
        let preparation = try Self.prepareAuthorize(request, services: services, now: now, logger: logger)
        let found: TokenizationContext? = try preparation.statement.map { statement in
            // Planned as the TSP authorization's context statement is (one generic plan per
            // connection, B-tree look-ups only), in the same round trip.
            var pipeline: PostgresPipeline = [PushContext.planSettings]
            let contextRead = pipeline.append(statement)
            return try connection.pipeline(pipeline)[contextRead]
        }
        let decided = try Self.decideAuthorize(
            request, preparation, found: found, services: services, now: now, responseId: responseId)
        for statement in decided.closing { try connection.execute(statement) }
        decided.announce(services: services, logger: logger)
        return decided.answer
    }

    /// The decision on `found` (nil: no card), its answer encoded once, and the statements that
    /// record the attempt and, for yellow, the token awaiting step-up with its `created` event.
    static func decideAuthorize(
        _ request: MDESAuthorizeServiceRequest, _ preparation: AuthorizePreparation, found: TokenizationContext?,
        services: MDESIssuerServices, now: Date, responseId: String
    ) throws -> AuthorizeDecision {
        let account = preparation.data.account
        let tokenReference = request.fundingAccountInfo.tokenUniqueReference
        let deviceID = request.paymentAppInstanceId
        let source = preparation.data.source?.ruleName.flatMap(TokenizationSource.init(name:))
        let attemptID = UUID.random()
        let decisioning = request.walletProviderDecisioningInfo
        let tokenization = TokenizationRequest(
            channel: .mdes, attemptID: attemptID,
            subject: AttemptSubject(
                deviceID: deviceID, tokenReference: tokenReference, tokenRequestorID: request.tokenRequestorId,
                tokenizationSource: source?.name, requestID: request.requestId),
            facts: request.facts(lastFour: String(account.accountNumber.suffix(4))),
            expiration: preparation.data.expiration, now: now, network: "mastercard"
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
            tokenization, context: found, ruleset: services.risk.rules.current, risk: services.risk)
        var response = MDESAuthorizeServiceResponse(
            responseId: responseId, decision: MDESDecision(decided.attempt),
            services: request.services.filter(\.isKnown),
            cvcResponse: .notProcessed)
        if decided.flow == .yellow {
            response.activationMethods = activationMethods(customer: decided.customer, allowed: decided.stepUpMethods)
        }
        // Built once as a tree: the attempt keeps it, and its sorted text is the answer's body.
        let answerTree = response.tree
        var answerBytes: [UInt8] = []
        answerBytes.reserveCapacity(256)
        answerTree.appendJSON(to: &answerBytes, sortedKeys: true)
        var record = decided.record
        record.facts["response"] = answerTree
        var closing = [AttemptStore.insertion(record)]
        // The token awaits step-up under its unique reference (Request Activation Methods,
        // Deliver and Validate Activation Code find it there); after its attempt (foreign key).
        // Its history starts with `created`, as a yellow TSP token's does.
        if decided.flow == .yellow, let tokenReference, let cardID = record.cardID {
            closing.append(
                TokenStore.pendingMDESCreation(
                    tokenReference: tokenReference, cardID: cardID, deviceID: deviceID,
                    tokenRequestorID: request.tokenRequestorId, wallet: PostgresJSON(rawJSON: request.tokenWalletJSON),
                    attemptID: attemptID, now: now))
        }
        return AuthorizeDecision(
            answer: .init(status: 200, body: answerBytes), closing: closing, attemptID: attemptID, flow: record.flow,
            hits: decided.countedHits)
    }
}
