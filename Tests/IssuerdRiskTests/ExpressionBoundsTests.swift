import Foundation
import IssuerdRisk
import Testing

/// A long chain of `or`, `and` or `+` in one condition once crashed whatever compiled it (a
/// stack overflow in the recursive compiler). Chains are now flat and compiled in a loop;
/// a condition, a file and a ruleset are bounded in terms (``RulesetLimits``), and so is the
/// number of distinct velocity values; past a bound the parser refuses with a positioned error.
struct ExpressionBoundsTests {
    static let limit = RulesetLimits.conditionTerms

    /// `operand op operand op …` with `count` operands.
    static func chain(_ operand: String, _ op: String, count: Int) -> String {
        Array(repeating: operand, count: count).joined(separator: " \(op) ")
    }

    /// The column of the `n`th (1-based) space-separated word of a condition written by
    /// ``rule(_:outcome:stepUp:mode:when:)`` (which starts it at column 8).
    static func column(ofWord n: Int, in condition: String) -> Int {
        8 + condition.split(separator: " ").prefix(n - 1).reduce(0) { $0 + $1.count + 1 }
    }

    /// A condition whose every space-separated word is one term is refused once, at the word
    /// that passes the bound, without crashing and without reading on.
    static func expectRefusedAtTheBound(_ condition: String) throws {
        let found = diagnostics(rule(when: condition) + rule("r2", when: "wallet.device_scor <= 2"))
        #expect(found.count == 2, "the long condition once, and the next rule is still checked")
        let diagnostic = try #require(found.first)
        #expect(
            diagnostic.location
                == SourceLocation(file: "test.rules", line: 6, column: column(ofWord: limit + 1, in: condition)))
        #expect(diagnostic.message == "expression is longer than \(limit) terms (values and operators)")
        #expect(found.last?.message == "unknown attribute 'wallet.device_scor'")
    }

    // MARK: Long chains are refused, and the refusal does not recurse

    @Test func aHundredThousandOrTermsAreRefused() throws {
        for count in [10 * Self.limit, 100_000] {
            try Self.expectRefusedAtTheBound(Self.chain("true", "or", count: count))
        }
    }

    @Test func aHundredThousandAndTermsAreRefused() throws {
        for count in [10 * Self.limit, 100_000] {
            try Self.expectRefusedAtTheBound(Self.chain("wallet.device_score", "and", count: count))
        }
    }

    @Test func aHundredThousandPlusOnesAreRefused() throws {
        for count in [10 * Self.limit, 100_000] {
            try Self.expectRefusedAtTheBound("wallet.device_score + " + Self.chain("1", "+", count: count) + " > 3")
            try Self.expectRefusedAtTheBound(Self.chain("card.age", "-", count: count) + " > 1d")
            try Self.expectRefusedAtTheBound(Self.chain("2", "*", count: count) + " > 1")
        }
    }

    @Test func longChainsInParenthesesCallsListsAndExamplesAreRefused() throws {
        let long = Self.chain("1", "+", count: 100_000)
        for condition in [
            "(" + long + ") > 1", "known(" + long + ")", "wallet.device_score in [" + long + "]",
            "true and (true or (" + Self.chain("true", "or", count: 100_000) + "))",
        ] {
            let found = diagnostics(rule(when: condition))
            #expect(found.count == 1)
            #expect(found.first?.location.line == 6)
            #expect(found.first?.message == "expression is longer than \(Self.limit) terms (values and operators)")
        }

        // An example's given key or value is bounded the same way (its text is written back
        // into messages, which recursed too).
        let ruleset = try compileRules(rule(when: "attempts(card, 24h) > 1"))
        let cases = "example \"long\"\n  given {\n    attempts(card, " + long + "): 1\n  }\n  expect green\nend\n"
        let error = #expect(throws: RulesetError.self) {
            try ExampleSuite.run([RulesetFile(path: "long.cases", contents: cases)], against: ruleset)
        }
        #expect(error?.diagnostics.count == 1)
        #expect(error?.diagnostics.first?.location.file == "long.cases")
        #expect(error?.diagnostics.first?.location.line == 3)
        #expect(error?.diagnostics.first?.message.hasPrefix("expression is longer than") == true)
    }

    @Test func aReloadOfAHundredThousandTermFileFailsAndTheLastGoodRulesetServes() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-risk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let file = root.appendingPathComponent("policy.rules")
        try rule(when: "wallet.device_score <= 2").write(to: file, atomically: true, encoding: .utf8)
        let loader = RulesetLoader(directory: root, contentHasher: RulesetContent.fnv1a64)
        let active = ActiveRuleset(try loader.load())
        let good = active.status.version

        try rule(when: Self.chain("wallet.device_score <= 2", "or", count: 100_000)).write(
            to: file, atomically: true, encoding: .utf8)
        guard case .failed(let failure) = active.reload(from: loader, now: Date(), by: "watcher") else {
            Issue.record("a 100,000-term condition must not load")
            return
        }
        #expect(failure.message.hasPrefix("policy.rules:6:"))
        #expect(failure.message.contains("error: expression is longer than \(Self.limit) terms"))
        #expect(active.status.version == good)
    }

    // MARK: At the bound: compiles, and evaluates as the nested operations would

    /// Sets a number attribute to 1 (its `== 1` is true), 2 (false) or nil (unknown).
    static var switches: [(name: String, path: WritableKeyPath<RiskInput, Double?>)] {
        [
            ("wallet.device_score", \.walletDeviceScore), ("wallet.account_score", \.walletAccountScore),
            ("wallet.phone_score", \.walletPhoneScore), ("wallet.token_risk_score", \.networkTokenRiskScore),
            ("customer.name_match_score", \.nameMatchScore), ("device.active_tokens", \.deviceActiveTokens),
        ]
    }

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
            #expect(
                fired == (expected == true) && unresolved == (expected == nil),
                "\(combination) → \(String(describing: expected))")
        }
    }

    /// A chain of exactly ``RulesetLimits/conditionTerms`` terms: `count − 1` comparisons of
    /// one attribute and a last one on another, `not`-ed (four terms per operand with its operator).
    static func logicalChainAtTheBound(_ op: String, _ comparison: String, extraNot: Bool = false) -> String {
        let count = limit / 4
        let operands =
            (1..<count).map { "wallet.device_score \(comparison) \($0)" } + [
                "\(extraNot ? "not " : "")not card.country == \"US\""
            ]
        return operands.joined(separator: " \(op) ")
    }

    static func outcome(_ ruleset: Ruleset, score: Double?, country: String?) -> Bool? {
        var input = cleanInput()
        input.walletDeviceScore = score
        input.cardCountry = country
        let decision = ruleset.evaluate(input, velocity: [])
        if decision.hits.contains(where: { $0.ruleID == "r1" }) { return true }
        return decision.unresolved.contains { $0.ruleID == "r1" } ? nil : false
    }

    @Test func anOrChainAtTheBoundCompilesAndEvaluates() throws {
        #expect(Self.limit % 4 == 0, "the chain below is exactly at the bound")
        let condition = Self.logicalChainAtTheBound("or", "==")
        let ruleset = try compileRules(rule(when: condition))
        #expect(
            ruleset.rules[0].conditionText.hasPrefix(
                String(repeating: "(", count: Self.limit / 4 - 2) + "(wallet.device_score == 1) or"))
        #expect(
            Self.outcome(ruleset, score: 3, country: nil) == true, "true or unknown is true: the rest does not matter")
        #expect(Self.outcome(ruleset, score: nil, country: "FR") == true, "unknown or true is true")
        #expect(Self.outcome(ruleset, score: nil, country: "US") == nil, "unknown or false is unknown")
        #expect(Self.outcome(ruleset, score: nil, country: nil) == nil)
        #expect(Self.outcome(ruleset, score: 0, country: "US") == false)
        #expect(Self.outcome(ruleset, score: 0, country: "FR") == true)

        let over = Self.logicalChainAtTheBound("or", "==", extraNot: true)
        let found = diagnostics(rule(when: over))
        #expect(
            found.map(\.location) == [
                SourceLocation(file: "test.rules", line: 6, column: 8 + over.count - "\"US\"".count)
            ])
    }

    @Test func anAndChainAtTheBoundCompilesAndEvaluates() throws {
        let ruleset = try compileRules(rule(when: Self.logicalChainAtTheBound("and", "!=")))
        #expect(Self.outcome(ruleset, score: 0, country: "FR") == true)
        #expect(Self.outcome(ruleset, score: 0, country: nil) == nil, "true and unknown is unknown")
        #expect(
            Self.outcome(ruleset, score: 5, country: nil) == false,
            "false and unknown is false: the rest does not matter")
        #expect(Self.outcome(ruleset, score: nil, country: "US") == false, "unknown and false is false")
        #expect(Self.outcome(ruleset, score: nil, country: "FR") == nil)
        #expect(diagnostics(rule(when: Self.logicalChainAtTheBound("and", "!=", extraNot: true))).count == 1)
    }

    @Test func anArithmeticChainAtTheBoundCompilesAndEvaluatesLeftToRight() throws {
        // wallet.device_score * 2 (3 terms), then 497 × "- 1" (994), "==" and "-477" (3): 1,000.
        let ones = (Self.limit - 6) / 2
        #expect(3 + 2 * ones + 3 == Self.limit)
        let target = 2 * 10 - ones
        let condition = "wallet.device_score * 2 - " + Self.chain("1", "-", count: ones) + " == -\(-target)"
        let ruleset = try compileRules(rule(when: condition))
        var input = cleanInput()
        input.walletDeviceScore = 10
        #expect(
            ruleset.evaluate(input, velocity: []).hits.map(\.ruleID) == ["r1"],
            "(((20 - 1) - 1) …), not 20 - (1 - (1 - …))")
        input.walletDeviceScore = 11
        #expect(ruleset.evaluate(input, velocity: []).hits.isEmpty)
        input.walletDeviceScore = nil
        #expect(
            ruleset.evaluate(input, velocity: []).unresolved.map(\.ruleID) == ["r1"],
            "an unknown operand makes the sum unknown")
        #expect(
            diagnostics(rule(when: condition.replacingOccurrences(of: "== -", with: "== --"))).count == 1,
            "one more term is refused")
    }

    @Test(
        arguments: [
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
        #expect(
            decision.unresolved.contains { $0.ruleID == "r1" } == (expected == nil),
            "dividing by 0 or an unknown operand is unknown")
    }

    @Test func chainsAreWrittenBackAndReportedAsTheNestedForm() throws {
        let flat =
            "wallet.device_score == 1 or wallet.account_score == 1 or wallet.phone_score == 1 or card.age < 1d or not known(card.age)"
        let nested =
            "(((wallet.device_score == 1 or wallet.account_score == 1) or wallet.phone_score == 1) or card.age < 1d) or not known(card.age)"
        let text = try compileRules(rule(when: flat)).rules[0].conditionText
        #expect(
            text
                == "((((wallet.device_score == 1) or (wallet.account_score == 1)) or (wallet.phone_score == 1)) or (card.age < 24h)) or not known(card.age)"
        )
        #expect(text == (try compileRules(rule(when: nested)).rules[0].conditionText))

        // The first type error of a long chain is where the nested form reported it.
        let mixed = diagnostics(rule(when: "card.age + 1d + 1d + 1d + 3 > 1d"))
        #expect(mixed.map(\.location.column) == [32])
        #expect(mixed.first?.message == "cannot apply '+' to a duration and a number")
        let notBool = diagnostics(rule(when: "true or true or true or true or card.age"))
        #expect(notBool.first?.location.column == 40)
        #expect(notBool.first?.message == "'or' joins conditions, but this is a duration")
    }

    // MARK: A file's and a ruleset's totals

    /// Rules `prefix1`… with conditions of 999 terms (`true or …`, 500 operands).
    static func longRules(_ prefix: String, count: Int) -> String {
        (1...count).map { rule("\(prefix)\($0)", when: chain("true", "or", count: 500)) }.joined()
    }
    static let termsPerRule = 999
    static let linesPerRule = 7

    @Test func aFileIsBoundedInTermsAndNotReadPastTheBound() throws {
        let fits = RulesetLimits.fileTerms / Self.termsPerRule
        #expect(try compileRules(Self.longRules("r", count: fits)).rules.count == fits)

        let text = Self.longRules("r", count: fits + 1) + rule("broken", when: "wallet.device_scor <= 2")
        let found = diagnostics(text)
        #expect(found.count == 1, "nothing after the bound is read")
        let term = RulesetLimits.fileTerms - fits * Self.termsPerRule + 1
        #expect(
            found.first?.location
                == SourceLocation(
                    file: "test.rules", line: fits * Self.linesPerRule + 6,
                    column: Self.column(ofWord: term, in: Self.chain("true", "or", count: 500))))
        #expect(
            found.first?.message.hasPrefix(
                "the conditions of this file are longer than \(RulesetLimits.fileTerms) terms") == true)
    }

    @Test func aRulesetDirectoryIsBoundedInTermsOverAllItsFiles() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-risk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let rulesPerFile = RulesetLimits.fileTerms / Self.termsPerRule
        let termsPerFile = rulesPerFile * Self.termsPerRule
        let filesThatFit = RulesetLimits.rulesetTerms / termsPerFile
        func write(_ index: Int, _ text: String) throws {
            try text.write(to: root.appendingPathComponent("f\(index).rules"), atomically: true, encoding: .utf8)
        }
        for index in 1...filesThatFit { try write(index, Self.longRules("f\(index).r", count: rulesPerFile)) }
        let loader = RulesetLoader(directory: root, contentHasher: RulesetContent.fnv1a64)
        #expect(
            try loader.load().rules.count == filesThatFit * rulesPerFile,
            "every file within its own bound, the total within the ruleset's")

        try write(filesThatFit + 1, Self.longRules("f\(filesThatFit + 1).r", count: rulesPerFile))
        try write(filesThatFit + 2, rule("broken", when: "wallet.device_scor <= 2"))
        do {
            _ = try loader.load()
            Issue.record("a ruleset past its total must not load")
        } catch {
            #expect(error.diagnostics.count == 1, "nothing after the bound is read: \(error.diagnostics)")
            let term = RulesetLimits.rulesetTerms - filesThatFit * termsPerFile + 1
            let rule = (term - 1) / Self.termsPerRule
            let column = Self.column(ofWord: term - rule * Self.termsPerRule, in: Self.chain("true", "or", count: 500))
            #expect(
                error.diagnostics.first?.location
                    == SourceLocation(
                        file: "f\(filesThatFit + 1).rules", line: rule * Self.linesPerRule + 6, column: column))
            #expect(
                error.diagnostics.first?.message.hasPrefix(
                    "the conditions of the ruleset are longer than \(RulesetLimits.rulesetTerms) terms") == true)
        }
    }

    // MARK: Distinct velocity values

    /// One rule per window, `attempts(card, Nm) >= 1` for N in `windows`.
    static func velocityRules(_ windows: some Sequence<Int>) -> String {
        windows.map { rule("v\($0)", when: "attempts(card, \($0)m) >= 1") }.joined()
    }

    @Test func distinctVelocityValuesAreCapped() throws {
        let cap = RulesetLimits.velocityQueries
        let atTheCap = try compileRules(
            Self.velocityRules(1...cap) + rule("again", when: "attempts(card, 1m) >= 2 or attempts(card, \(cap)m) > 9"))
        #expect(atTheCap.velocityQueries.count == cap, "a query used again is not a new one")

        let found = diagnostics(Self.velocityRules(1...cap + 1))
        #expect(found.count == 1)
        #expect(
            found.first?.location == SourceLocation(file: "test.rules", line: cap * Self.linesPerRule + 6, column: 8))
        #expect(
            found.first?.message.hasSuffix("is one distinct velocity value too many: a ruleset may read at most \(cap)")
                == true)

        // The finding: 3,000 distinct windows (in three files, each within its own bound), each
        // rule past the cap refused.
        let files = (0..<3).map {
            RulesetFile(path: "v\($0).rules", contents: Self.velocityRules($0 * 1_000 + 1...$0 * 1_000 + 1_000))
        }
        let error = #expect(throws: RulesetError.self) {
            try RulesetCompiler.compile(files, contentHasher: RulesetContent.fnv1a64)
        }
        #expect(error?.diagnostics.count == 3_000 - cap)
        #expect(
            error?.diagnostics.first?.location
                == SourceLocation(file: "v0.rules", line: cap * Self.linesPerRule + 6, column: 8))
    }
}
