/// A compiled rule's description: everything but its condition.
public struct Rule: Sendable, Identifiable {
    /// Unique within the ruleset, e.g. `device.blocked`.
    public let id: String
    /// One line for humans.
    public let title: String
    /// `yellow` or `orange`: rules never decide green.
    public let outcome: Flow
    /// The reason code stored with the decision.
    public let reason: String
    /// The step-up methods this rule allows when it hits (nil: no restriction).
    public let stepUp: StepUpMethods?
    /// The owning team.
    public let owner: String
    /// Live rules decide; shadow rules are only recorded.
    public let mode: RuleMode
    /// Where the rule is written.
    public let location: SourceLocation
    /// The condition as written, whitespace-normalised (for `rules explain` and audit).
    public let conditionText: String
}

/// One value a hit rule read, as recorded in the decision.
public struct RuleValue: Sendable, Hashable, CustomStringConvertible {
    /// The attribute or velocity call, e.g. `wallet.device_score` or `attempts(card, 24h)`.
    public let name: String
    /// Its value at decision time (``RiskValue/unknown`` when missing).
    public let value: RiskValue

    /// A recorded value.
    public init(name: String, value: RiskValue) {
        self.name = name
        self.value = value
    }

    public var description: String { "\(name) = \(value)" }
}

/// A rule that hit (or could not be decided), with everything needed to explain it.
public struct RuleHit: Sendable, Hashable, CustomStringConvertible {
    /// The rule id, or a fixed `invariant.*` id for the invariants in code.
    public let ruleID: String
    /// The rule's outcome.
    public let outcome: Flow
    /// The reason code.
    public let reason: String
    /// Live or shadow.
    public let mode: RuleMode
    /// The step-up methods the rule allows, if it restricts them.
    public let stepUp: StepUpMethods?
    /// Every value the rule's condition reads, in the order it reads them.
    public internal(set) var values: [RuleValue]

    /// A hit.
    public init(ruleID: String, outcome: Flow, reason: String, mode: RuleMode, stepUp: StepUpMethods? = nil, values: [RuleValue]) {
        self.ruleID = ruleID
        self.outcome = outcome
        self.reason = reason
        self.mode = mode
        self.stepUp = stepUp
        self.values = values
    }

    /// The names of the values that were unknown when the rule was evaluated.
    public var unknowns: [String] { values.filter { $0.value.isUnknown }.map(\.name) }

    /// True for the built-in invariants.
    public var isInvariant: Bool { ruleID.hasPrefix("invariant.") }

    public var description: String {
        "\(ruleID) \(outcome)\(mode == .shadow ? " (shadow)" : "") \(reason) {" + values.map(\.description).joined(separator: ", ") + "}"
    }
}
