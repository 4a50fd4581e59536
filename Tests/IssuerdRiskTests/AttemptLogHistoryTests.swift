import Foundation
import IssuerdRisk
import Testing

/// `"replay": false` attempts (what the PostgreSQL export writes before `--since`) count as
/// history for velocity but are not replayed themselves.
struct AttemptLogHistoryTests {
    static let log = """
        {"type":"attempt","id":"h1","time":"2025-03-01T09:00:00Z","card_id":"c1","device_id":"d1","customer_id":"u1","replay":false}
        {"type":"attempt","id":"h2","time":"2025-03-01T09:30:00Z","card_id":"c1","device_id":"d1","customer_id":"u1","replay":false}
        {"type":"attempt","id":"a1","time":"2025-03-01T10:00:00Z","card_id":"c1","device_id":"d1","customer_id":"u1","replay":true,"attributes":{"card.status":"active"}}
        """

    @Test func historyOnlyAttemptsCountForVelocityButAreNotReplayed() throws {
        let log = try AttemptLog(jsonLines: Self.log)
        #expect(log.attempts.map(\.id) == ["a1"])
        #expect(log.events.count == 3)
        let current = try compileRules(rule("none", when: "attempts(card, 24h) >= 100"))
        let candidate = try compileRules(rule("burst", outcome: "orange", when: "attempts(card, 2h) >= 2"))
        let report = Backtest.run(current: current, candidate: candidate, log: log)
        #expect(report.attempts == 1)
        #expect(report.candidateMix == [.orange: 1])
        #expect(
            report.sample.first?.after.hits.first?.values == [RuleValue(name: "attempts(card, 2h)", value: .number(2))])
    }

    @Test(arguments: [#""replay":"no""#, #""replay":0"#, #""replay":null"#])
    func aReplayFlagThatIsNotABooleanIsRefusedWithItsLine(flag: String) {
        let text = #"{"type":"attempt","id":"x","time":"2025-03-01T10:00:00Z","card_id":"c1",\#(flag)}"#
        #expect(throws: AttemptLogError.self) { try AttemptLog(jsonLines: "\n" + text) }
        do {
            _ = try AttemptLog(jsonLines: "\n" + text)
        } catch {
            #expect(error.line == 2)
            #expect(error.message.contains("replay"))
        }
    }
}
