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
    @Test(
        "Each slice counts its own attempts' current outcomes: a later report overrules an earlier one, attempts at one instant are told apart, an attempt outside the window is not counted, and hours kept from an earlier run count the same"
    )
    func outcomesFoundBySlice() throws {
        let app = try ReplayDecisionTests.app(rules: try ReplayDecisionTests.rules())
        _ = try ReplayDecisionTests.seed(app)
        let attempts = try ReplayDecisionTests.stored(app)
        try #require(attempts.count >= 5)
        let ids = attempts.map { $0.id.uuidString.lowercased() }
        // Three attempts at one instant five hours ago, one two hours ago, the rest as made:
        // the stream reads them in slices of an hour and less.
        let now = Date()
        let tied = now.addingTimeInterval(-5 * 3_600)
        let later = now.addingTimeInterval(-2 * 3_600)
        try app.pool.withConnection { connection in
            try connection.execute(
                "UPDATE provisioning_attempts SET created_at = \(tied) WHERE attempt_id = ANY(\(Array(ids[0...2]))::uuid[])"
            )
            try connection.execute(
                "UPDATE provisioning_attempts SET created_at = \(later) WHERE attempt_id = \(ids[3])::uuid")
        }
        // The tied attempt 0: fraud, then legitimate on a later report (the current one); 1:
        // fraud with an amount; 2: none; 3: legitimate; 4: fraud with an amount.
        let admin = try app.apiKey(role: .admin)
        let reports = [
            #"{"attemptId":"\#(ids[0])","outcome":"fraud","source":"analyst","reportedAt":"2026-11-01T00:00:00Z"}"#,
            #"{"attemptId":"\#(ids[0])","outcome":"legitimate","source":"analyst","reportedAt":"2026-11-02T00:00:00Z"}"#,
            #"{"attemptId":"\#(ids[1])","outcome":"fraud","source":"chargeback","amountLost":{"value":50000,"currency":"KRW"}}"#,
            #"{"attemptId":"\#(ids[3])","outcome":"legitimate","source":"cardholder"}"#,
            #"{"attemptId":"\#(ids[4])","outcome":"fraud","source":"chargeback","amountLost":{"value":7000,"currency":"KRW"}}"#,
        ]
        let posted = try app.client.postJSON(
            "/v1/admin/outcomes", #"{"outcomes":[\#(reports.joined(separator: ","))]}"#,
            headers: AdminFixtures.bearer(admin))
        #expect(posted.jsonObject()?["recorded"] as? Int == reports.count)

        let ruleset = app.application.context.rules.current
        func performance(
            _ since: Date, _ until: Date, cache: BacktestWindowCache? = nil
        ) throws -> Backtest.Performance? {
            let outcome = try HistoryBacktest.run(
                current: ruleset, candidate: ruleset, since: since, until: until, limit: 1_000, database: app.pool,
                cache: cache, now: now)
            guard case .report(let report, _) = outcome else {
                Issue.record("unexpected \(outcome)")
                return nil
            }
            return report.performance
        }
        func live(_ since: Date, _ until: Date) throws -> RulePerformance {
            try app.pool.withConnection { connection in
                try RulePerformance.read(
                    since: since, until: until, ruleset: ruleset, maturity: .seconds(86_400), now: now,
                    connection: connection)
            }
        }
        let windows: [(since: Date, until: Date, fraud: Int, legitimate: Int)] = [
            (now.addingTimeInterval(-6 * 3_600), now.addingTimeInterval(3_600), 2, 2),
            (now.addingTimeInterval(-6 * 3_600), now.addingTimeInterval(-4 * 3_600), 1, 1),  // the tied ones
            (now.addingTimeInterval(-4 * 3_600), now.addingTimeInterval(3_600), 1, 1),
        ]
        for window in windows {
            let side = try #require(try performance(window.since, window.until)).current
            #expect(side.fraud == window.fraud && side.legitimate == window.legitimate)
            let totals = try live(window.since, window.until).totals
            #expect(side.fraud == totals.fraud && side.legitimate == totals.legitimate)
            #expect(side.fraudPassedGreen == totals.fraudPassedGreen)
            #expect(side.fraudPassedGreenAmount == totals.fraudPassedGreenAmount)
        }
        // A window with attempts but no outcome has no performance figures.
        try app.pool.withConnection { connection in
            try connection.execute(
                "UPDATE provisioning_attempts SET created_at = \(now.addingTimeInterval(-9 * 3_600)) WHERE attempt_id = \(ids[2])::uuid"
            )
        }
        #expect(try performance(now.addingTimeInterval(-10 * 3_600), now.addingTimeInterval(-8 * 3_600)) == nil)

        // The complete hours kept by a first run give the same figures in a second.
        let cache = BacktestWindowCache(capacity: 100)
        let since = now.addingTimeInterval(-6 * 3_600)
        let first = try performance(since, now, cache: cache)
        let second = try performance(since, now, cache: cache)
        #expect(first != nil && first == second)
        #expect(first?.current.fraud == 2 && first?.current.legitimate == 2)
    }
}
