import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage
import IssuerdTestSupport
import IssuerdWire
import Testing

@testable import IssuerdAPI

/// The one tokenization decision TSP authorization and MDES Authorize Service share, on a real
/// context statement: the same request decided for either channel records the same decision.
@Suite("The tokenization decision TSP and MDES share")
struct TokenizationDecisionTests {
    /// The context statement's result for `pan` (as both channels read it).
    static func context(_ app: TestApplication, pan: String, deviceID: String, now: Date) throws -> TokenizationContext
    {
        let ruleset = app.application.context.rules.current
        let fingerprint = try app.application.context.vault.fingerprint(try #require(PrimaryAccountNumber(pan)))
        let statement = TokenizationContext.statement(
            requestID: UUID().uuidString, tokenReference: "DNITHE" + UUID().uuidString.prefix(8),
            fingerprint: fingerprint, deviceID: deviceID,
            velocity: VelocityBatch(
                subject: VelocitySubject(deviceID: deviceID), time: now, queries: ruleset.velocityQueries),
            pushesSince: now.addingTimeInterval(-TokenizationAuthorization.yellowPushWindow))
        var pipeline: PostgresPipeline = [PushContext.planSettings]
        let read = pipeline.append(statement)
        return try app.pool.withConnection { try $0.pipeline(pipeline)[read] }
    }

    static func request(
        _ channel: RequestChannel, expiration: CardExpiration??, deviceID: String, now: Date
    ) -> TokenizationRequest {
        TokenizationRequest(
            channel: channel, attemptID: UUID(), subject: AttemptSubject(deviceID: deviceID, requestID: "r-1"),
            facts: ["lastFour": "1111"], expiration: expiration, now: now
        ) { card, customer, cardActiveTokens in
            RiskRequest(
                channel: channel, card: card, customer: customer,
                device: DeviceInfo(id: deviceID, type: "phone", name: "iPhone"),
                cardActiveTokens: cardActiveTokens, time: now)
        }
    }

    @Test func bothChannelsDecideAndRecordAlike() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-shared")
        try DecisionFixtures.card(app, "card-shared", customer: "cust-shared", createdDaysAgo: 400)
        let now = Date()
        let context = try Self.context(app, pan: DecisionFixtures.visaPAN, deviceID: "dev-shared", now: now)
        let ruleset = app.application.context.rules.current
        let risk = RiskService(context: app.application.context)
        let expiry = CardExpiration(month: 12, year: 30)
        let tsp = try TokenizationDecision.decide(
            Self.request(.tsp, expiration: .some(expiry), deviceID: "dev-shared", now: now), context: context,
            ruleset: ruleset, risk: risk)
        let mdes = try TokenizationDecision.decide(
            Self.request(.mdes, expiration: .some(expiry), deviceID: "dev-shared", now: now), context: context,
            ruleset: ruleset, risk: risk)
        #expect(tsp.refusal == nil)
        #expect(tsp.record.channel == .tsp)
        #expect(mdes.record.channel == .mdes)
        #expect(tsp.record.cardID == "card-shared")
        #expect(tsp.record.customerID == "cust-shared")
        #expect(tsp.attempt == AttemptDecision(tsp.flow))
        #expect(
            (tsp.flow, tsp.attempt, tsp.record.allowedMethods) == (mdes.flow, mdes.attempt, mdes.record.allowedMethods))
        #expect(tsp.record.hits == mdes.record.hits)
        #expect(tsp.countedHits.map(\.ruleID) == mdes.countedHits.map(\.ruleID))
    }

    /// A wrong expiry, or one that is no expiry, is refused by the expiry check alone; none sent
    /// is not checked; no card is refused by the card check before the rules run.
    @Test func checksRefuseBeforeOrBesideTheRules() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-checks")
        try DecisionFixtures.card(app, "card-checks", customer: "cust-checks", createdDaysAgo: 400)
        let now = Date()
        let context = try Self.context(app, pan: DecisionFixtures.visaPAN, deviceID: "dev-checks", now: now)
        let ruleset = app.application.context.rules.current
        let risk = RiskService(context: app.application.context)
        for expiration: CardExpiration?? in [.some(CardExpiration(month: 11, year: 30)), .some(nil)] {
            let refused = try TokenizationDecision.decide(
                Self.request(.mdes, expiration: expiration, deviceID: "dev-checks", now: now), context: context,
                ruleset: ruleset, risk: risk)
            #expect(refused.refusal?.ruleID == RequestChecks.expiryMismatch)
            #expect((refused.flow, refused.attempt, refused.record.allowedMethods) == (.orange, .declined, []))
            #expect(refused.evaluation != nil, "the rules ran beside the check")
        }
        let unchecked = try TokenizationDecision.decide(
            Self.request(.mdes, expiration: nil, deviceID: "dev-checks", now: now), context: context,
            ruleset: ruleset, risk: risk)
        #expect(unchecked.refusal == nil)
        let noCard = try TokenizationDecision.decide(
            Self.request(.tsp, expiration: .some(nil), deviceID: "dev-checks", now: now), context: nil,
            ruleset: ruleset, risk: risk)
        #expect(noCard.refusal?.ruleID == RequestChecks.cardNotFound)
        #expect(noCard.evaluation == nil)
        #expect(noCard.countedHits.isEmpty)
        #expect(noCard.record.cardID == nil)
        #expect((noCard.flow, noCard.attempt) == (.orange, .declined))
    }
}
