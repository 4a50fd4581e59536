import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdRisk
import IssuerdStorage
import IssuerdWire

/// What a token service's tokenization request (TSP authorization, MDES Authorize Service)
/// brings beside the context statement's row: the attempt's subject and facts, the expiry it
/// sent, and its channel's signals for the rules.
struct TokenizationRequest {
    var channel: RequestChannel
    var attemptID: UUID
    /// The card and customer are filled in once the context found the card.
    var subject: AttemptSubject
    /// The request facts explain needs (never more of the PAN than its last four).
    var facts: [String: JSONValue]
    /// The expiry sent: nil when none was (MDES allows it; then not checked), `.some(nil)` when
    /// what was sent is no expiry (it matches no card).
    var expiration: CardExpiration??
    var now: Date
    /// The only card network this service tokenizes (MDES: Mastercard); nil for any. A card of
    /// another network is refused as an unknown card is, recorded against the card.
    var network: String? = nil
    /// The channel's rule request for the card found (its owner and active tokens given).
    var riskRequest: (_ card: CardRecord, _ customer: CustomerRecord?, _ cardActiveTokens: Int) -> RiskRequest
}

/// The one tokenization decision TSP and MDES share: the card by keyed PAN fingerprint, the
/// request's checks (card found, expiry, the pending yellow push of that card on that device,
/// the methods the customer can receive) recorded for replays beside the rules' attributes,
/// the rules' decision, and the attempt record built from it. Each channel writes only its
/// own answer from it.
struct TokenizationDecision {
    /// The attempt, decided (its `facts` without the answer, which the channel adds).
    var record: AttemptRecord
    /// The check that refused the request before or beside the rules: the answer names only it.
    var refusal: RuleHit?
    /// The rules' own evaluation; nil when the card was not found.
    var evaluation: RiskDecision?
    /// The final decision, the checks applied.
    var decision: RiskDecision
    var customer: CustomerRecord?

    /// The final flow (orange when a check refused).
    var flow: Flow { record.flow }
    /// What the attempt answers.
    var attempt: AttemptDecision { record.decision }
    /// The step-up methods a yellow decision allows (none otherwise).
    var stepUpMethods: StepUpMethods { flow == .yellow ? decision.stepUpMethods : [] }
    /// The rules' hits, as counted in the decision metrics.
    var countedHits: [RuleHit] { evaluation?.hits ?? [] }

    /// Decides `request` with what the context statement read (nil: the PAN is no card number,
    /// so no statement ran).
    static func decide(
        _ request: TokenizationRequest, context: TokenizationContext?, ruleset: Ruleset, risk: RiskService
    ) throws -> TokenizationDecision {
        var record = AttemptRecord(
            attemptID: request.attemptID, channel: request.channel, subject: request.subject,
            rulesetVersion: ruleset.version, facts: request.facts, createdAt: request.now)
        guard let context, let card = context.card, request.network.map({ $0 == card.paymentNetwork }) ?? true else {
            // No value: the facts hold the last four, and no more of the PAN is kept (the console's rule).
            record.cardID = context?.card?.cardID
            record.customerID = context?.card?.customerID
            let checks = RequestChecks(cardFound: false)
            record.inputs = TokenizationAuthorization.inputs(.members([:]), checks: checks)
            return refused(record, ruleset.decide(RiskInput(), velocity: [], checks: checks), customer: nil)
        }
        record.cardID = card.cardID
        record.customerID = card.customerID
        let customer = context.customer
        let checks = RequestChecks(
            // An expiry not sent is not checked; one sent must be the card's.
            expiryMatches: request.expiration.map { $0 == card.expiration } ?? true,
            pendingPush: context.pendingPush.map { push in
                RequestChecks.PendingPush(
                    attemptID: push.attemptID.lowercasedString,
                    methods: StepUpMethods(names: push.allowedMethods))
            },
            reachableMethods: TokenizationAuthorization.reachableMethods(customer: customer))
        // The one decision function a replay calls too (``Ruleset/decide(_:velocity:checks:)``),
        // with the checks recorded in `inputs` for it.
        let assessment = try risk.assess(
            request.riskRequest(card, customer, context.cardActiveTokens), ruleset: ruleset,
            velocity: context.velocity, checks: checks)
        record.cardholderNameHash = assessment.cardholderNameHash
        record.inputs = TokenizationAuthorization.inputs(assessment.attributes, checks: checks)
        record.features = assessment.features
        record.unknowns = assessment.decision.unknowns
        record.unresolved = assessment.decision.unresolved
        let checked = assessment.checked
        if checked.refusal != nil { return refused(record, checked, customer: customer) }
        let decision = checked.decision
        record.hits = Self.hits(decision)
        record.flow = decision.flow
        record.decision = AttemptDecision(decision.flow)
        record.allowedMethods = decision.flow == .yellow ? decision.stepUpMethods.methodNames : []
        return TokenizationDecision(
            record: record, refusal: nil, evaluation: checked.evaluation, decision: decision, customer: customer)
    }

    /// A DECLINED attempt refused by a check before (card not found) or beside (expiry
    /// mismatch) the rules.
    private static func refused(
        _ record: AttemptRecord, _ checked: CheckedDecision, customer: CustomerRecord?
    ) -> TokenizationDecision {
        var record = record
        record.flow = .orange
        record.decision = .declined
        record.allowedMethods = []
        record.hits = hits(checked.decision)
        return TokenizationDecision(
            record: record, refusal: checked.refusal, evaluation: checked.evaluation, decision: checked.decision,
            customer: customer)
    }

    /// The hits as stored: the checks' in the pseudo-hits' shape (``DecisionJSON/pseudoHit(_:)``).
    private static func hits(_ decision: RiskDecision) -> [JSONValue] {
        decision.hits.map { $0.isCheck ? DecisionJSON.pseudoHit($0) : DecisionJSON.hit($0) }
    }

    /// The answer's reasons: the rules' live hits, most severe first, with the checks' hits
    /// (an orange one first).
    var reasons: [Reason] {
        guard let evaluation else { return [] }
        var reasons = DecisionJSON.reasons(evaluation)
        for hit in decision.hits.dropFirst(evaluation.hits.count) {
            let reason = Reason(rule: hit.ruleID, reason: hit.reason)
            if hit.outcome == .orange { reasons.insert(reason, at: 0) } else { reasons.append(reason) }
        }
        return reasons
    }
}
