import IssuerdCore
import IssuerdRisk
import IssuerdWire

/// How decisions are written into attempts and answers: every hit with the values it read
/// (`hits`), and the live hits as the wire's `reasons`.
package enum DecisionJSON {
    /// One hit: rule, outcome, reason, mode, step-up restriction and every value read
    /// (`value` as stored for replay, `text` as analysts write it, e.g. `24h`).
    package static func hit(_ hit: RuleHit) -> JSONValue {
        var object: [String: JSONValue] = [
            "rule": .string(hit.ruleID), "outcome": .string(hit.outcome.description), "reason": .string(hit.reason),
            "mode": .string(hit.mode.rawValue),
            "values": .array(
                hit.values.map { value in
                    ["name": .string(value.name), "value": json(value.value), "text": .string(value.value.description)]
                }),
        ]
        if let methods = hit.stepUp { object["stepUp"] = .array(methods.methodNames.map(JSONValue.string)) }
        return .object(object)
    }

    /// Appends ``hit(_:)``'s object as JSON text, written straight from the hit: a decision
    /// stores every hit and every unresolved rule, and building them as `JSONValue`
    /// dictionaries first was about 3 % of a provisioning request's CPU. Members in no
    /// particular order, as `jsonb` keeps its own (``DecisionJSONTests`` holds it to `hit(_:)`).
    package static func appendHit(_ hit: RuleHit, to out: inout [UInt8]) {
        let parts = hit.jsonParts
        out.append(contentsOf: parts.head)
        hit.forEachValue { index, _, value in
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: parts.valueNames[index])
            json(value).appendJSON(to: &out, sortedKeys: false)
            JSONText.appendLiteral(#","text":"#, to: &out)
            JSONText.appendString(value.description, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(contentsOf: parts.tail)
    }

    /// A hit that is not a rule of the ruleset (card not found, expiry mismatch, a yellow push
    /// carried into the TSP authorization), written in the same shape.
    package static func pseudoHit(rule: String, outcome: Flow, reason: String, values: [String: JSONValue]) -> JSONValue
    {
        [
            "rule": .string(rule), "outcome": .string(outcome.description), "reason": .string(reason), "mode": "live",
            "values": .array(values.sorted { $0.key < $1.key }.map { ["name": .string($0.key), "value": $0.value] }),
        ]
    }

    /// A request check's hit (``RequestChecks``) in the pseudo-hit shape attempts have always
    /// stored it in (values without `text`).
    package static func pseudoHit(_ hit: RuleHit) -> JSONValue {
        pseudoHit(
            rule: hit.ruleID, outcome: hit.outcome, reason: hit.reason,
            values: Dictionary(hit.values.map { ($0.name, json($0.value)) }, uniquingKeysWith: { first, _ in first }))
    }

    /// The checks as the `checks` member of an attempt's `inputs` (``RequestChecks/jsonText``).
    package static func checks(_ checks: RequestChecks) -> JSONValue {
        var object: [String: JSONValue] = [:]
        if !checks.cardFound { object["cardFound"] = false }
        if !checks.expiryMatches { object["expiryMatches"] = false }
        if let push = checks.pendingPush {
            object["pendingPush"] = [
                "attemptId": .string(push.attemptID), "methods": .array(push.methods.methodNames.map(JSONValue.string)),
            ]
        }
        if let reachable = checks.reachableMethods {
            object["reachableMethods"] = .array(reachable.methodNames.map(JSONValue.string))
        }
        return .object(object)
    }

    /// The live hits, most severe first, as the wire's reasons.
    package static func reasons(_ decision: RiskDecision) -> [Reason] {
        decision.liveHits.sorted { $0.outcome > $1.outcome }.map { Reason(rule: $0.ruleID, reason: $0.reason) }
    }

    /// A recorded value as JSON: durations in seconds, unknown as null.
    package static func json(_ value: RiskValue) -> JSONValue {
        switch value {
        case .unknown: .null
        case .bool(let flag): .bool(flag)
        case .number(let number), .duration(let number):
            number.rounded() == number && abs(number) < 1e15 ? .int(Int(number)) : .double(number)
        case .string(let text): .string(text)
        case .strings(let texts): .array(texts.map(JSONValue.string))
        }
    }

    /// The wire's flow name.
    package static func flow(_ flow: Flow) -> String { flow.description }
}
