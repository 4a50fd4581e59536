import Foundation
import IssuerdRisk
import Testing

/// The committed `rules/` directory compiles, and every one of its example cases passes.
struct DefaultPolicyTests {
    static let directory = repositoryRoot.appendingPathComponent("rules")

    static func report() throws -> ExampleSuite.Report {
        let loader = RulesetLoader(directory: directory, contentHasher: RulesetContent.fnv1a64)
        let files = try loader.files()
        return try ExampleSuite.run(files, against: try loader.load())
    }

    @Test func theDefaultPolicyCompiles() throws {
        let ruleset = try RulesetLoader(directory: Self.directory, contentHasher: RulesetContent.fnv1a64).load()
        #expect(ruleset.rules.count >= 20)
        #expect(ruleset.rules.contains { $0.mode == .shadow })
        #expect(ruleset.version.hasPrefix("fnv1a64:"))
    }

    @Test func everyExampleCasePasses() throws {
        let report = try Self.report()
        #expect(report.results.count >= 30)
        for result in report.results {
            #expect(result.passed, "\(result.example.location) \(result.example.name): \(result.failures)")
        }
    }

    @Test func everyRuleHasAnExampleThatMakesItHit() throws {
        #expect(try Self.report().uncoveredRules == [])
    }

    @Test func aFailingExampleIsReportedWithItsPosition() throws {
        let rules = RulesetFile(path: "a.rules", contents: rule(when: "wallet.device_score <= 2"))
        let cases = RulesetFile(
            path: "a.cases",
            contents: """
                example "wrong on purpose"
                  given { wallet.device_score: 1, card.status: "active", wallet.recommendation: "approve" }
                  expect green
                  hits [r2]
                end
                """)
        let ruleset = try RulesetCompiler.compile([rules], contentHasher: RulesetContent.fnv1a64)
        let report = try ExampleSuite.run([rules, cases], against: ruleset)
        #expect(!report.passed)
        #expect(
            report.results.first?.failures == [
                "expected green, got yellow", "expected to hit but did not: r2", "hit but not expected: r1",
            ])
        #expect(report.results.first?.example.location == SourceLocation(file: "a.cases", line: 1, column: 1))

        let typo = RulesetFile(
            path: "b.cases", contents: "example \"x\"\n  given { card.stauts: \"active\" }\n  expect green\nend\n")
        #expect(throws: RulesetError.self) { try ExampleSuite.run([rules, typo], against: ruleset) }
        do {
            _ = try ExampleSuite.run([rules, typo], against: ruleset)
        } catch {
            #expect(
                error.diagnostics.first?.description
                    == "b.cases:2:11: error: unknown attribute 'card.stauts'; expected an attribute name (see docs/rules.md); did you mean 'card.status'?"
            )
        }
    }

    @Test func theVersionIsAContentHashOverPathsAndContents() throws {
        let a = RulesetFile(path: "a.rules", contents: rule(when: "card.age < 1d"))
        let list = RulesetFile(path: "lists/x.list", contents: "type string\nA\n")
        let first = try RulesetCompiler.compile([a, list], contentHasher: RulesetContent.fnv1a64).version
        #expect(
            try RulesetCompiler.compile([list, a], contentHasher: RulesetContent.fnv1a64).version == first,
            "order of discovery does not matter")
        let changedList = RulesetFile(path: "lists/x.list", contents: "type string\nB\n")
        #expect(try RulesetCompiler.compile([a, changedList], contentHasher: RulesetContent.fnv1a64).version != first)
        let renamed = RulesetFile(path: "b.rules", contents: a.contents)
        #expect(try RulesetCompiler.compile([renamed, list], contentHasher: RulesetContent.fnv1a64).version != first)
        let recorded = try RulesetCompiler.compile([a], contentHasher: { bytes in "len:\(bytes.count)" })
        #expect(recorded.version == "len:\(RulesetContent.canonicalBytes(of: [a]).count)")
    }
}

/// docs/rules.md documents every attribute and function the compiler accepts.
struct RulesDocumentationTests {
    @Test func everyAttributeAndFunctionIsDocumented() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/rules.md"), encoding: .utf8)
        for attribute in AttributeCatalog.all {
            #expect(text.contains("`\(attribute.name)`"), "docs/rules.md does not document \(attribute.name)")
        }
        for metric in VelocityMetric.allCases {
            #expect(text.contains("`\(metric.functionName)("), "docs/rules.md does not document \(metric.functionName)")
        }
        for code in WalletReasonCodes.names {
            #expect(text.contains("`\(code)`"), "docs/rules.md does not list reason code \(code)")
        }
    }
}
