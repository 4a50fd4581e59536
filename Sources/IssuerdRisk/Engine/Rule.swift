import IssuerdCore

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
///
/// The rule's fixed facts live in one shared immutable ``Header``, so recording a hit on the
/// request path copies one reference and the values read, not every string of the rule.
public struct RuleHit: Sendable, Hashable, CustomStringConvertible {
    /// What does not change from one hit of a rule to the next.
    final class Header: Sendable {
        let ruleID: String
        let outcome: Flow
        let reason: String
        let mode: RuleMode
        let stepUp: StepUpMethods?
        let valueNames: [String]
        /// Whether a request check recorded it (``RequestChecks``), not a rule or an invariant.
        let isCheck: Bool
        /// The hit's JSON object around its values, written once per rule (``JSONParts``).
        let json: JSONParts

        init(
            ruleID: String, outcome: Flow, reason: String, mode: RuleMode, stepUp: StepUpMethods?, valueNames: [String],
            isCheck: Bool = false
        ) {
            self.ruleID = ruleID
            self.outcome = outcome
            self.reason = reason
            self.mode = mode
            self.stepUp = stepUp
            self.valueNames = valueNames
            self.isCheck = isCheck
            var head: [UInt8] = []
            JSONText.appendLiteral(#"{"rule":"#, to: &head)
            JSONText.appendString(ruleID, to: &head)
            JSONText.appendLiteral(#","outcome":"#, to: &head)
            JSONText.appendString(outcome.description, to: &head)
            JSONText.appendLiteral(#","reason":"#, to: &head)
            JSONText.appendString(reason, to: &head)
            JSONText.appendLiteral(#","mode":"#, to: &head)
            JSONText.appendString(mode.rawValue, to: &head)
            JSONText.appendLiteral(#","values":["#, to: &head)
            let names = valueNames.map { name in
                var member: [UInt8] = []
                JSONText.appendLiteral(#"{"name":"#, to: &member)
                JSONText.appendString(name, to: &member)
                JSONText.appendLiteral(#","value":"#, to: &member)
                return member
            }
            var tail: [UInt8] = [UInt8(ascii: "]")]
            if let stepUp {
                JSONText.appendLiteral(#","stepUp":["#, to: &tail)
                for (index, name) in stepUp.methodNames.enumerated() {
                    if index > 0 { tail.append(UInt8(ascii: ",")) }
                    JSONText.appendString(name, to: &tail)
                }
                tail.append(UInt8(ascii: "]"))
            }
            tail.append(UInt8(ascii: "}"))
            json = JSONParts(head: head, valueNames: names, tail: tail)
        }
    }

    /// A hit's JSON object (`{"rule":…,"outcome":…,"reason":…,"mode":…,"values":[…],"stepUp":[…]}`)
    /// but for its values: the text before them, each value's `{"name":…,"value":`, and the text
    /// after them. A decision stores every hit, and these parts were most of writing one.
    public struct JSONParts: Sendable {
        /// Up to and including `"values":[`.
        public let head: [UInt8]
        /// `{"name":"<name>","value":` for each value, in ``RuleHit/values`` order.
        public let valueNames: [[UInt8]]
        /// From the values' `]` to the object's `}`.
        public let tail: [UInt8]
    }

    /// The hit's JSON text but for its values (``JSONParts``), escaped when the rule was compiled.
    public var jsonParts: JSONParts { header.json }

    let header: Header
    /// The values read, in ``Header/valueNames`` order.
    let readValues: [RiskValue]

    init(header: Header, readValues: [RiskValue]) {
        self.header = header
        self.readValues = readValues
    }

    /// A hit.
    public init(
        ruleID: String, outcome: Flow, reason: String, mode: RuleMode, stepUp: StepUpMethods? = nil, values: [RuleValue]
    ) {
        header = Header(
            ruleID: ruleID, outcome: outcome, reason: reason, mode: mode, stepUp: stepUp, valueNames: values.map(\.name)
        )
        readValues = values.map(\.value)
    }

    /// The hit of a request check (``RequestChecks``).
    init(check ruleID: String, outcome: Flow, reason: String, values: [RuleValue]) {
        header = Header(
            ruleID: ruleID, outcome: outcome, reason: reason, mode: .live, stepUp: nil, valueNames: values.map(\.name),
            isCheck: true)
        readValues = values.map(\.value)
    }

    /// The rule id, or a fixed `invariant.*` id for the invariants in code.
    public var ruleID: String { header.ruleID }
    /// The rule's outcome.
    public var outcome: Flow { header.outcome }
    /// The reason code.
    public var reason: String { header.reason }
    /// Live or shadow.
    public var mode: RuleMode { header.mode }
    /// The step-up methods the rule allows, if it restricts them.
    public var stepUp: StepUpMethods? { header.stepUp }

    /// Every value the rule's condition reads, in the order it reads them.
    public var values: [RuleValue] {
        zip(header.valueNames, readValues).map { RuleValue(name: $0, value: $1) }
    }

    /// Calls `body` with each value's position, name and value, in ``values`` order, without
    /// building that array (a decision's writer visits every hit's values once).
    public func forEachValue(_ body: (_ index: Int, _ name: String, _ value: RiskValue) -> Void) {
        for index in readValues.indices { body(index, header.valueNames[index], readValues[index]) }
    }

    /// The names of the values that were unknown when the rule was evaluated.
    public var unknowns: [String] {
        zip(header.valueNames, readValues).filter { $1.isUnknown }.map(\.0)
    }

    /// True for the built-in invariants.
    public var isInvariant: Bool { ruleID.hasPrefix("invariant.") }

    /// True for the hit of a request check (``RequestChecks``): an unknown card, an expiry
    /// mismatch, a pending yellow push, a yellow decision the customer can receive no method of.
    public var isCheck: Bool { header.isCheck }

    public static func == (a: RuleHit, b: RuleHit) -> Bool {
        a.ruleID == b.ruleID && a.outcome == b.outcome && a.reason == b.reason && a.mode == b.mode
            && a.stepUp == b.stepUp && a.isCheck == b.isCheck
            && a.header.valueNames == b.header.valueNames && a.readValues == b.readValues
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ruleID)
        hasher.combine(readValues)
    }

    public var description: String {
        "\(ruleID) \(outcome)\(mode == .shadow ? " (shadow)" : "") \(reason) {"
            + values.map(\.description).joined(separator: ", ") + "}"
    }
}
