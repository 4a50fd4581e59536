import Foundation
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("A backtest measures serving and candidate against outcomes as rule performance measures live decisions")
struct BacktestPerformanceTests {
    @Test("A candidate identical to serving: its backtest figures are the live performance of the same attempts")
    func identicalCandidate() throws {
        let app = try ReplayDecisionTests.app(rules: try ReplayDecisionTests.rules())
        _ = try ReplayDecisionTests.seed(app)
        let attempts = try ReplayDecisionTests.stored(app)
        // Every attempt gets an outcome: fraud (with an amount) or legitimate, in turn.
        let admin = try app.apiKey(role: .admin)
        let reports = attempts.enumerated().map { index, attempt in
            index % 3 == 0
                ? #"{"attemptId":"\#(attempt.id.uuidString.lowercased())","outcome":"fraud","source":"chargeback","amountLost":{"value":\#(10_000 * (index + 1)),"currency":"KRW"}}"#
                : #"{"attemptId":"\#(attempt.id.uuidString.lowercased())","outcome":"legitimate","source":"cardholder"}"#
        }
        let posted = try app.client.postJSON(
            "/v1/admin/outcomes", #"{"outcomes":[\#(reports.joined(separator: ","))]}"#,
            headers: AdminFixtures.bearer(admin))
        #expect(posted.jsonObject()?["recorded"] as? Int == attempts.count)

        let ruleset = app.application.context.rules.current
        let since = Date().addingTimeInterval(-3_600)
        let until = Date().addingTimeInterval(3_600)
        let outcome = try HistoryBacktest.run(
            current: ruleset, candidate: ruleset, since: since, until: until, limit: 1_000, database: app.pool)
        guard case .report(let report, _) = outcome else {
            Issue.record("unexpected \(outcome)")
            return
        }
        let performance = try #require(report.performance)
        #expect(performance.current == performance.candidate)
        #expect(performance.caughtMore == 0 && performance.letThrough == 0 && performance.legitimateStepUpsAdded == 0)

        let live = try app.pool.withConnection { connection in
            try RulePerformance.read(
                since: since, until: until, ruleset: ruleset, maturity: .seconds(86_400), now: Date(),
                connection: connection)
        }
        let side = performance.candidate
        #expect(side.fraud == live.totals.fraud)
        #expect(side.legitimate == live.totals.legitimate)
        #expect(side.fraudPassedGreen == live.totals.fraudPassedGreen)
        #expect(side.fraudPassedGreenAmount == live.totals.fraudPassedGreenAmount)
        #expect(live.totals.fraud > 0 && live.totals.fraudPassedGreen > 0)
        var compared = 0
        for rule in live.rules where rule.decided > 0 {
            let replayed = side.rules["\(rule.mode) \(rule.ruleId)"]
            #expect(replayed?.fraud ?? 0 == rule.fraud, "\(rule.ruleId)")
            #expect(replayed?.legitimate ?? 0 == rule.legitimate, "\(rule.ruleId)")
            #expect(replayed?.fraudAmount ?? 0 == rule.fraudAmount, "\(rule.ruleId)")
            #expect(replayed?.precision == rule.precision, "\(rule.ruleId)")
            #expect(replayed.flatMap { side.recall($0) } == rule.recall, "\(rule.ruleId)")
            compared += 1
        }
        #expect(compared >= 5)
        // And nothing decided in the replay that the live figures do not know.
        for (key, rule) in side.rules where rule.fraud + rule.legitimate > 0 {
            #expect(live.rules.contains { "\($0.mode) \($0.ruleId)" == key && $0.decided > 0 }, "\(key)")
        }
    }
}
