/// The engine's answer for one request: the flow, and everything needed to explain and re-run it.
public struct RiskDecision: Sendable, Hashable {
    /// green, yellow or orange: the most severe live hit.
    public let flow: Flow
    /// The step-up methods a yellow flow may offer (the intersection of every live hit's
    /// restriction); empty unless the flow is yellow.
    public let stepUpMethods: StepUpMethods
    /// Every rule that hit, live and shadow, invariants first, then in ruleset order.
    public let hits: [RuleHit]
    /// Rules whose condition came out *unknown* because a value was missing: they did not
    /// fire; each carries the values it read, unknowns included.
    public let unresolved: [RuleHit]
    /// The flow had every shadow rule been live (for shadow reports).
    public let shadowFlow: Flow
    /// The content hash of the ruleset that decided.
    public let rulesetVersion: String

    /// The live hits, which decided the flow.
    public var liveHits: [RuleHit] { hits.filter { $0.mode == .live } }

    /// The reason codes of the live hits, most severe first.
    public var reasons: [String] {
        liveHits.sorted { $0.outcome > $1.outcome }.map(\.reason)
    }

    /// Every value that was unknown in a hit or unresolved rule, sorted and deduplicated.
    public var unknowns: [String] {
        // Collected, sorted and deduplicated in one array (a Set of every name, then sorted,
        // was 1 % of a provisioning request).
        var names: [String] = []
        for rule in [hits, unresolved] {
            for hit in rule {
                for (name, value) in zip(hit.header.valueNames, hit.readValues) where value.isUnknown {
                    names.append(name)
                }
            }
        }
        names.sort()
        var unique: [String] = []
        unique.reserveCapacity(names.count)
        for name in names where unique.last != name { unique.append(name) }
        return unique
    }
}
