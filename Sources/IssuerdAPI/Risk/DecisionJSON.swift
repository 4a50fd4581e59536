import IssuerdHTTP
import IssuerdRisk
import IssuerdWire

/// How decisions are written into attempts and answers: every hit with the values it read
/// (`hits`), and the live hits as the wire's `reasons`.
enum DecisionJSON {
    /// One hit: rule, outcome, reason, mode, step-up restriction and every value read
    /// (`value` as stored for replay, `text` as analysts write it, e.g. `24h`).
    static func hit(_ hit: RuleHit) -> JSONValue {
        var object: [String: JSONValue] = [
            "rule": .string(hit.ruleID), "outcome": .string(hit.outcome.description), "reason": .string(hit.reason),
            "mode": .string(hit.mode.rawValue),
            "values": .array(hit.values.map { value in
                ["name": .string(value.name), "value": RiskInputBuilder.json(value.value), "text": .string(value.value.description)]
            }),
        ]
        if let methods = hit.stepUp { object["stepUp"] = .array(methods.methodNames.map(JSONValue.string)) }
        return .object(object)
    }

    /// A hit that is not a rule of the ruleset (card not found, expiry mismatch, a yellow push
    /// carried into the TSP authorization), written in the same shape.
    static func pseudoHit(rule: String, outcome: Flow, reason: String, values: [String: JSONValue]) -> JSONValue {
        [
            "rule": .string(rule), "outcome": .string(outcome.description), "reason": .string(reason), "mode": "live",
            "values": .array(values.sorted { $0.key < $1.key }.map { ["name": .string($0.key), "value": $0.value] }),
        ]
    }

    /// The live hits, most severe first, as the wire's reasons.
    static func reasons(_ decision: RiskDecision) -> [Reason] {
        decision.liveHits.sorted { $0.outcome > $1.outcome }.map { Reason(rule: $0.ruleID, reason: $0.reason) }
    }

    /// The wire's flow name.
    static func flow(_ flow: Flow) -> String { flow.description }
}
