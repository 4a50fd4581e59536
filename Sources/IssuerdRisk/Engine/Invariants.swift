/// The rules that live in code because no file may weaken them (never more permissive than
/// the wallet; a lost, stolen or closed card is never provisioned).
///
/// They are recorded as hits with fixed ids so a decision explains itself the same way
/// whichever rule decided it.
public enum Invariants {
    /// Wallet or TSP recommended DECLINED ⇒ orange.
    public static let walletDeclined = "invariant.wallet_declined"
    /// Wallet or TSP recommended REQUIRE_ADDITIONAL_AUTHENTICATION ⇒ at least yellow.
    public static let walletRequiresAuthentication = "invariant.wallet_requires_authentication"
    /// Card lost, stolen or closed ⇒ orange.
    public static let cardUnusable = "invariant.card_unusable"
    /// Yellow, but the live hits' step-up restrictions leave no method ⇒ orange.
    public static let noStepUpMethod = "invariant.no_step_up_method"

    static func apply(to input: RiskInput, hits: inout [RuleHit], unresolved: inout [RuleHit]) {
        switch input.walletRecommendation {
        case .decline?:
            hits.append(
                RuleHit(
                    ruleID: walletDeclined, outcome: .orange, reason: "WALLET_DECLINED", mode: .live,
                    values: [RuleValue(name: "wallet.recommendation", value: .string("decline"))]))
        case .requireAdditionalAuthentication?:
            hits.append(
                RuleHit(
                    ruleID: walletRequiresAuthentication, outcome: .yellow, reason: "WALLET_REQUIRES_AUTHENTICATION",
                    mode: .live,
                    values: [
                        RuleValue(name: "wallet.recommendation", value: .string("require_additional_authentication"))
                    ]))
        case .approve?:
            break
        case nil:
            unresolved.append(
                RuleHit(
                    ruleID: walletDeclined, outcome: .orange, reason: "WALLET_DECLINED", mode: .live,
                    values: [RuleValue(name: "wallet.recommendation", value: .unknown)]))
        }
        switch input.cardStatus {
        case .lost?, .stolen?, .closed?:
            hits.append(
                RuleHit(
                    ruleID: cardUnusable, outcome: .orange, reason: "CARD_NOT_USABLE", mode: .live,
                    values: [RuleValue(name: "card.status", value: .string(input.cardStatus?.name ?? ""))]))
        case .active?, .blocked?:
            break
        case nil:
            unresolved.append(
                RuleHit(
                    ruleID: cardUnusable, outcome: .orange, reason: "CARD_NOT_USABLE", mode: .live,
                    values: [RuleValue(name: "card.status", value: .unknown)]))
        }
    }
}
