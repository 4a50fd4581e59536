import Foundation
import IssuerdRisk
import Testing

/// Issue 36: a long chain of `or`, `and` or `+` in one condition crashed whatever compiled it
/// (a stack overflow in the recursive compiler). Chains are now flat and compiled in a loop,
/// with the value, the errors and the text of the nested binary operations they stand for.
struct ExpressionBoundsTests {
    // MARK: Chains evaluate as the nested operations would

    /// Sets a number attribute to 1 (its `== 1` is true), 2 (false) or nil (unknown).
    static var switches: [(name: String, path: WritableKeyPath<RiskInput, Double?>)] { [
        ("wallet.device_score", \.walletDeviceScore), ("wallet.account_score", \.walletAccountScore),
        ("wallet.phone_score", \.walletPhoneScore), ("wallet.token_risk_score", \.networkTokenRiskScore),
        ("customer.name_match_score", \.nameMatchScore), ("device.active_tokens", \.deviceActiveTokens),
    ] }

    /// `and` / `or` chains of 2 to 6 operands (nested closures up to 4, a loop beyond) give
    /// Kleene's value for every combination of true, false and unknown operands.
    @Test(arguments: ["and", "or"], 2...6)
    func logicalChainsFollowKleeneForEveryCombination(_ op: String, _ count: Int) throws {
        let operands = Self.switches.prefix(count).map { "\($0.name) == 1" }
        let ruleset = try compileRules(rule(when: operands.joined(separator: " \(op) ")))
        var combination = [Bool?](repeating: true, count: count)
        for code in 0..<Int(pow(3, Double(count))) {
            var input = cleanInput()
            var rest = code
            for index in 0..<count {
                combination[index] = [true, false, nil][rest % 3]
                rest /= 3
                input[keyPath: Self.switches[index].path] = combination[index].map { $0 ? 1 : 2 }
            }
            // The left fold of the binary operators, as the docs define them.
            let expected = combination.dropFirst().reduce(combination[0]) { (a: Bool?, b: Bool?) -> Bool? in
                let decisive = op == "or"
                if a == decisive || b == decisive { return decisive }
                if a == nil || b == nil { return nil }
                return !decisive
            }
            let decision = ruleset.evaluate(input, velocity: [])
            let fired = decision.hits.contains { $0.ruleID == "r1" }
            let unresolved = decision.unresolved.contains { $0.ruleID == "r1" }
            #expect(fired == (expected == true) && unresolved == (expected == nil), "\(combination) → \(String(describing: expected))")
        }
    }

    /// A chain of exactly ``RulesetLimits/conditionTerms`` terms: `count − 1` comparisons of

    @Test(arguments: [
        ("x - 0.1 + 0.2 - 0.3 + 0.4 - 0.5 == ((((x - 0.1) + 0.2) - 0.3) + 0.4) - 0.5", 0.7, true),
        ("x * 3 / 7 * 11 / 13 * 17 == ((((x * 3) / 7) * 11) / 13) * 17", 0.7, true),
        ("x * 1 * 1 * 1 * 1 / 0 > 0 or x * 1 * 1 * 1 * 1 / 0 <= 0", 0.7, nil),
        ("x + 1 + 1 + 1 + 1 + 1 == 6", nil, nil),
        ("x + 1 + 1 + 1 + 1 + 1 == 6", 1, true),
        ("1d + 1d + 1d + 1d + card.age == 5d", nil, nil),
    ] as [(String, Double?, Bool?)])
    func longArithmeticChainsMatchTheirNestedForm(_ condition: String, _ x: Double?, _ expected: Bool?) throws {
        let ruleset = try compileRules(rule(when: condition.replacingOccurrences(of: "x", with: "wallet.device_score")))
        var input = cleanInput()
        input.walletDeviceScore = x
        input.cardAge = x.map { $0 * 86_400 }
        let decision = ruleset.evaluate(input, velocity: [])
        #expect(decision.hits.contains { $0.ruleID == "r1" } == (expected == true))
        #expect(decision.unresolved.contains { $0.ruleID == "r1" } == (expected == nil), "dividing by 0 or an unknown operand is unknown")
    }

    @Test func chainsAreWrittenBackAndReportedAsTheNestedForm() throws {
        let flat = "wallet.device_score == 1 or wallet.account_score == 1 or wallet.phone_score == 1 or card.age < 1d or not known(card.age)"
        let nested = "(((wallet.device_score == 1 or wallet.account_score == 1) or wallet.phone_score == 1) or card.age < 1d) or not known(card.age)"
        let text = try compileRules(rule(when: flat)).rules[0].conditionText
        #expect(text == "((((wallet.device_score == 1) or (wallet.account_score == 1)) or (wallet.phone_score == 1)) or (card.age < 24h)) or not known(card.age)")
        #expect(text == (try compileRules(rule(when: nested)).rules[0].conditionText))

        // The first type error of a long chain is where the nested form reported it.
        let mixed = diagnostics(rule(when: "card.age + 1d + 1d + 1d + 3 > 1d"))
        #expect(mixed.map(\.location.column) == [32])
        #expect(mixed.first?.message == "cannot apply '+' to a duration and a number")
        let notBool = diagnostics(rule(when: "true or true or true or true or card.age"))
        #expect(notBool.first?.location.column == 40)
        #expect(notBool.first?.message == "'or' joins conditions, but this is a duration")
    }
}
