/// Runs the example cases of a ruleset (`rules test`).
public enum ExampleSuite {
    /// The outcome of one example.
    public struct Result: Sendable {
        /// The example.
        public var example: RuleExample
        /// The decision the ruleset produced.
        public var decision: RiskDecision
        /// Why it failed; empty when it passed.
        public var failures: [String]
        /// True when every expectation held.
        public var passed: Bool { failures.isEmpty }
    }

    /// Everything `rules test` reports.
    public struct Report: Sendable {
        /// One result per example, in file order.
        public var results: [Result]
        /// Rules that no example makes hit: every rule needs at least one.
        public var uncoveredRules: [String]
        /// True when every example passed and every rule is covered.
        public var passed: Bool { results.allSatisfy(\.passed) && uncoveredRules.isEmpty && !results.isEmpty }
    }

    /// Parses every `.cases` file among `files` and runs it against `ruleset`.
    ///
    /// - Throws: ``RulesetError`` for syntax errors, unknown attributes or values of the wrong
    ///   type in the examples (positioned, like rule errors).
    public static func run(_ files: [RulesetFile], against ruleset: Ruleset) throws(RulesetError) -> Report {
        var diagnostics: [RuleDiagnostic] = []
        var prepared: [(RuleExample, RiskInput, [Int?])] = []
        let slots = Dictionary(uniqueKeysWithValues: ruleset.velocityQueries.enumerated().map { ($1.description, $0) })
        for file in files.sorted(by: { $0.path < $1.path }) where file.path.hasSuffix(".cases") {
            let parsed = RuleExampleParser.parse(file: file.path, text: file.contents)
            diagnostics += parsed.diagnostics
            for example in parsed.examples {
                do {
                    let (input, velocity) = try inputs(of: example, slots: slots, count: ruleset.velocityQueries.count)
                    prepared.append((example, input, velocity))
                } catch {
                    diagnostics.append(error)
                }
            }
        }
        guard diagnostics.isEmpty else { throw RulesetError(diagnostics: diagnostics) }

        var hitRules = Set<String>()
        var results: [Result] = []
        for (example, input, velocity) in prepared {
            let decision = ruleset.evaluate(input, velocity: velocity)
            hitRules.formUnion(decision.hits.map(\.ruleID))
            var failures: [String] = []
            if decision.flow != example.expectedFlow {
                failures.append("expected \(example.expectedFlow), got \(decision.flow)")
            }
            if let expected = example.expectedHits {
                let actual = Set(decision.hits.map(\.ruleID))
                let missing = Set(expected).subtracting(actual).sorted()
                let extra = actual.subtracting(expected).sorted()
                if !missing.isEmpty {
                    failures.append("expected to hit but did not: \(missing.joined(separator: ", "))")
                }
                if !extra.isEmpty { failures.append("hit but not expected: \(extra.joined(separator: ", "))") }
            }
            if let expected = example.expectedStepUp, expected != decision.stepUpMethods {
                failures.append("expected step-up \(expected), got \(decision.stepUpMethods)")
            }
            results.append(Result(example: example, decision: decision, failures: failures))
        }
        let uncovered = ruleset.rules.map(\.id).filter { !hitRules.contains($0) }
        return Report(results: results, uncoveredRules: uncovered)
    }

    private static func inputs(
        of example: RuleExample, slots: [String: Int], count: Int
    ) throws(RuleDiagnostic) -> (RiskInput, [Int?]) {
        var input = RiskInput()
        var velocity = [Int?](repeating: nil, count: count)
        var seen = Set<String>()
        for given in example.given {
            guard seen.insert(given.key).inserted else {
                throw RuleDiagnostic(given.location, "'\(given.key)' is given twice in example \"\(example.name)\"")
            }
            if given.isVelocity {
                guard let slot = slots[given.key] else {
                    throw RuleDiagnostic(
                        given.location, "no rule reads \(given.key)", expected: "a velocity call the rules use",
                        suggestion: Suggestion.nearest(to: given.key, in: slots.keys))
                }
                switch given.value {
                case .number(let value) where value >= 0 && value.rounded() == value && value < 1e9:
                    velocity[slot] = Int(value)
                case .unknown: velocity[slot] = nil
                default:
                    throw RuleDiagnostic(
                        given.location, "\(given.key) is a count", expected: "a whole number ≥ 0 or unknown")
                }
                continue
            }
            guard let attribute = AttributeCatalog.byName[given.key] else {
                throw RuleDiagnostic(
                    given.location, "unknown attribute '\(given.key)'",
                    expected: "an attribute name (see docs/rules.md)",
                    suggestion: Suggestion.nearest(to: given.key, in: AttributeCatalog.all.map(\.name)))
            }
            guard attribute.assign(given.value, to: &input) else {
                var suggestion: String?
                if case .enumeration(let domain) = attribute.type, case .string(let name) = given.value {
                    suggestion = Suggestion.nearest(to: name, in: domain.names)
                }
                throw RuleDiagnostic(
                    given.location, "\(given.value) does not fit \(given.key)", expected: "a \(attribute.type)",
                    suggestion: suggestion)
            }
        }
        return (input, velocity)
    }
}
