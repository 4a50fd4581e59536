import Foundation
import IssuerdTestSupport
import Testing

/// The text report of `issuerd rules backtest`, read as an analyst reads it.
@Suite("The backtest's text table")
struct RulesBacktestTableTests {
    @Test("A rule id longer than the column's 40 characters still leaves a gap before its counts")
    func longRuleIDs() throws {
        let rules = TestApplication.repositoryRoot.appendingPathComponent("rules")
        let candidate = TestScratch.path("issuerd-rules-long-id")
        try FileManager.default.copyItem(at: rules, to: candidate)
        defer { try? FileManager.default.removeItem(at: candidate) }
        let id = "zz.a_shadow_rule_whose_identifier_is_long"
        try RulesTestData.rule(id, mode: "shadow", when: "wallet.device_score <= 0")
            .write(to: candidate.appendingPathComponent("policy/zz_long.rules"), atomically: true, encoding: .utf8)
        let input = TestScratch.path("issuerd-long-id.jsonl")
        defer { try? FileManager.default.removeItem(at: input) }
        try Data(
            #"""
            {"type":"attempt","id":"a1","time":"2025-03-01T10:00:00Z","card_id":"c1","device_id":"d1","customer_id":"u1","attributes":{"card.status":"active","wallet.device_score":0}}

            """#.utf8
        ).write(to: input)
        let result = try CommandLineRunner.run(
            ["rules", "backtest", "--current", rules.path, "--candidate", candidate.path, "--input", input.path],
            environment: [:])
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        let row = try #require(lines.first { $0.hasPrefix(id) }, "\(result.standardOutput)")
        let header = try #require(lines.first { $0.hasPrefix("rule ") })
        // The id, " (shadow)", at least two blanks, then the counts under their headings.
        #expect(row.hasPrefix(id + " (shadow)  "), "\(row)")
        let counts = row.dropFirst(id.count + " (shadow)".count).split(separator: " ")
        #expect(counts == ["-", "1", "+1"], "\(row)")
        #expect(
            header.range(of: "current")?.lowerBound.utf16Offset(in: header)
                == row.range(of: " -")
                .map { $0.lowerBound.utf16Offset(in: row) + 1 }, "\(header)\n\(row)")
    }
}
