import IssuerdRisk
import Testing

/// Every refusal is positioned exactly, says what was expected, and suggests near misses.
struct CompilerDiagnosticsTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var condition: String
        var line: Int
        var column: Int
        var fragment: String
        var suggestion: String?
        var testDescription: String { condition }
    }

    static let lists = ["blocked_devices": "type string\nd1\n"]

    @Test(arguments: [
        Case(
            condition: "wallet.acount_score <= 2", line: 6, column: 8,
            fragment: "unknown attribute 'wallet.acount_score'", suggestion: "wallet.account_score"),
        Case(
            condition: "wallet.device_score <= \"2\"", line: 6, column: 28,
            fragment: "cannot compare a number with a string"),
        Case(
            condition: "card.age < 14", line: 6, column: 17, fragment: "cannot compare a duration with a number",
            suggestion: "14d"),
        Case(
            condition: "device.id in @blocked_device", line: 6, column: 21, fragment: "unknown list '@blocked_device'",
            suggestion: "@blocked_devices"),
        Case(
            condition: "card.status == \"lsot\"", line: 6, column: 23, fragment: "\"lsot\" is not a card status",
            suggestion: "lost"),
        Case(
            condition: "card.status in [\"active\", \"stolne\"]", line: 6, column: 34,
            fragment: "\"stolne\" in this list is not a card status", suggestion: "stolen"),
        Case(condition: "wallet.device_score <= 2 and", line: 7, column: 1, fragment: "unexpected 'end'"),
        Case(
            condition: "attemps(card, 24h) > 1", line: 6, column: 8, fragment: "unknown function 'attemps'",
            suggestion: "attempts"),
        Case(condition: "attempts(card, 24h)", line: 6, column: 8, fragment: "a condition must be true or false"),
        Case(
            condition: "wallet.device_score = 2", line: 6, column: 28, fragment: "'=' is not a comparison",
            suggestion: "=="),
        Case(
            condition: "wallet.device_score => 2", line: 6, column: 28, fragment: "'=>' is not a comparison",
            suggestion: ">="),
        Case(
            condition: "wallet.device_score =< 2", line: 6, column: 28, fragment: "'=<' is not a comparison",
            suggestion: "<="),
        Case(
            condition: "wallet.device_score <= 2 && card.age < 1d", line: 6, column: 33,
            fragment: "'&&' is not an operator", suggestion: "and"),
        Case(
            condition: "wallet.device_score <= 2 || card.age < 1d", line: 6, column: 33,
            fragment: "'||' is not an operator", suggestion: "or"),
        Case(
            condition: "wallet.device_score <= 2 AND card.age < 1d", line: 6, column: 33,
            fragment: "'AND' is not an operator", suggestion: "and"),
        Case(
            condition: "wallet.device_score <= 2 OR card.age < 1d", line: 6, column: 33,
            fragment: "'OR' is not an operator", suggestion: "or"),
        Case(
            condition: "has(wallet.reason_codes, \"DEVICE_RECENTY_LOST\")", line: 6, column: 33,
            fragment: "is not a wallet reason code", suggestion: "DEVICE_RECENTLY_LOST"),
        Case(
            condition: "distinct_names(card, 24h) > 1", line: 6, column: 23,
            fragment: "distinct_names cannot be grouped by card"),
        Case(
            condition: "attempts(card, 24) > 1", line: 6, column: 23, fragment: "must be a duration literal",
            suggestion: "24d"),
        Case(condition: "attempts(card, 24x) > 1", line: 6, column: 25, fragment: "unknown duration unit 'x'"),
        Case(condition: "failed_otps(card, 500d) > 1", line: 6, column: 26, fragment: "out of range"),
        Case(condition: "card.country == \"US", line: 6, column: 24, fragment: "string is not closed"),
        Case(
            condition: "wallet.reason_codes == \"X\"", line: 6, column: 28,
            fragment: "cannot use '==' on a set of strings"),
        Case(
            condition: "customer.phone_last4_match < true", line: 6, column: 35,
            fragment: "'<' orders numbers and durations only"),
        Case(condition: "not wallet.device_score", line: 6, column: 12, fragment: "'not' needs true or false"),
        Case(
            condition: "card.age + 3 > 1d", line: 6, column: 17, fragment: "cannot apply '+' to a duration and a number"
        ),
    ])
    func conditionErrors(_ testCase: Case) throws {
        let found = diagnostics(rule(when: testCase.condition), lists: Self.lists)
        #expect(found.count == 1, "\(found)")
        let diagnostic = try #require(found.first)
        #expect(
            diagnostic.location == SourceLocation(file: "test.rules", line: testCase.line, column: testCase.column),
            "\(diagnostic)")
        #expect(diagnostic.message.contains(testCase.fragment), "\(diagnostic)")
        #expect(diagnostic.suggestion == testCase.suggestion, "\(diagnostic)")
    }

    @Test func duplicateRuleIDPointsAtTheSecondAndNamesTheFirst() throws {
        let found = diagnostics(rule(when: "card.age < 1d") + rule(when: "card.age < 2d"))
        let diagnostic = try #require(found.first)
        #expect(found.count == 1)
        #expect(diagnostic.location == SourceLocation(file: "test.rules", line: 8, column: 6))
        #expect(diagnostic.message == "duplicate rule id 'r1' (first defined at test.rules:1:6)")
    }

    @Test func headerErrors() {
        let misspeltField = diagnostics(
            "rule r1\n  titel \"t\"\n  outcome yellow\n  reason R\n  owner o\n  when card.age < 1d\nend\n")
        #expect(misspeltField.map(\.location.line) == [2])
        #expect(misspeltField.first?.location.column == 3)
        #expect(misspeltField.first?.suggestion == "title")

        let greenOutcome = diagnostics(rule(outcome: "green", when: "card.age < 1d"))
        #expect(greenOutcome.first?.message.contains("cannot decide green") == true)
        #expect(greenOutcome.first?.location == SourceLocation(file: "test.rules", line: 3, column: 11))

        let stepUpOnOrange = diagnostics(rule(outcome: "orange", stepUp: "[app]", when: "card.age < 1d"))
        #expect(stepUpOnOrange.first?.message == "'stepup' only applies to yellow rules")
        #expect(stepUpOnOrange.first?.location == SourceLocation(file: "test.rules", line: 6, column: 3))

        let badMethod = diagnostics(rule(stepUp: "[app, smss]", when: "card.age < 1d"))
        #expect(badMethod.first?.suggestion == "sms")
        #expect(badMethod.first?.location == SourceLocation(file: "test.rules", line: 6, column: 16))

        let missingTitle = diagnostics("rule r1\n  outcome yellow\n  reason R\n  owner o\n  when card.age < 1d\nend\n")
        #expect(missingTitle.first?.message == "rule 'r1' has no 'title'")
        #expect(missingTitle.first?.location == SourceLocation(file: "test.rules", line: 1, column: 1))
    }

    @Test func everyBrokenRuleIsReportedAndTheRulesetRefused() {
        let text =
            rule("a", when: "wallet.devce_score <= 2") + rule("b", when: "card.age < 1d")
            + rule("c", when: "card.status == \"gone\"")
        let found = diagnostics(text)
        #expect(found.map(\.location.line) == [6, 20])
        #expect(
            found.first?.description
                == "test.rules:6:8: error: unknown attribute 'wallet.devce_score'; expected an attribute name (see docs/rules.md); did you mean 'wallet.device_score'?"
        )
    }

    @Test func listFileErrors() {
        let untyped = diagnostics(rule(when: "device.id in @blocked"), lists: ["blocked": "d1\nd2\n"])
        #expect(untyped.first?.location == SourceLocation(file: "lists/blocked.list", line: 1, column: 1))
        #expect(untyped.first?.expected == "'type string' or 'type number'")

        let badNumber = diagnostics(
            rule(when: "wallet.device_score in @scores"), lists: ["scores": "# scores\ntype number\n1\n  two\n"])
        #expect(badNumber.first?.location == SourceLocation(file: "lists/scores.list", line: 4, column: 3))

        let wrongType = diagnostics(rule(when: "wallet.device_score in @names"), lists: ["names": "type string\nx\n"])
        #expect(wrongType.first?.message.contains("holds strings but the value is a number") == true)
        #expect(wrongType.first?.location == SourceLocation(file: "test.rules", line: 6, column: 31))
    }

    @Test func anEmptyRulesetIsRefused() {
        #expect(diagnostics("# nothing here\n").first?.message == "the ruleset has no rules")
    }

    @Test func hostileInputIsRefusedWithoutCrashing() {
        let deep = String(repeating: "(", count: 500) + "true" + String(repeating: ")", count: 500)
        #expect(diagnostics(rule(when: deep)).first?.message.contains("nested") == true)
        #expect(!diagnostics(rule(when: "1 / 0 > 1")).isEmpty == false)
        #expect(diagnostics(rule(when: "\u{0}")).first?.message.contains("unexpected character") == true)
    }
}
