import Foundation
import IssuerdRisk
import Testing

/// The backtest replays a JSONL export with velocity as of each attempt.
struct BacktestTests {
    static let log = """
        {"type":"attempt","id":"a1","time":"2025-03-01T10:00:00Z","card_id":"c1","device_id":"d1","customer_id":"u1","cardholder_name":"Jane Doe","attributes":{"card.status":"active","wallet.recommendation":"approve","wallet.device_score":4,"card.age":864000}}
        {"type":"attempt","id":"a2","time":"2025-03-01T10:05:00Z","card_id":"c1","device_id":"d1","customer_id":"u1","attributes":{"card.status":"active","wallet.recommendation":"approve","wallet.device_score":2}}
        {"type":"otp_failure","time":"2025-03-01T10:06:00Z","card_id":"c1","customer_id":"u1"}

        {"type":"attempt","id":"a3","time":"2025-03-01T10:10:00.500Z","card_id":"c1","device_id":"d2","customer_id":"u1","attributes":{"card.status":"active","wallet.recommendation":"approve","wallet.device_score":null}}
        """

    @Test func replaysWithVelocityAsOfEachAttempt() throws {
        let log = try AttemptLog(jsonLines: Self.log)
        #expect(log.attempts.map(\.id) == ["a1", "a2", "a3"])
        #expect(log.events.count == 4)
        #expect(log.attempts[0].input.cardAge == 864_000)
        #expect(log.attempts[2].input.walletDeviceScore == nil)

        let current = try compileRules(rule("low_device", when: "wallet.device_score <= 2"))
        let candidate = try compileRules(
            rule("low_device", when: "wallet.device_score <= 2")
                + rule("retry", outcome: "orange", when: "attempts(card, 1h) >= 1 and failed_otps(card, 1h) >= 1")
                + rule("watch", mode: "shadow", when: "attempts(card, 1h) >= 1")
        )
        var progress: [Int] = []
        let report = Backtest.run(current: current, candidate: candidate, log: log, progressEvery: 1) { done, _ in
            progress.append(done)
        }
        #expect(progress == [1, 2, 3])
        #expect(report.attempts == 3)
        #expect(report.currentMix == [.green: 2, .yellow: 1])
        #expect(report.candidateMix == [.green: 1, .yellow: 1, .orange: 1])
        #expect(report.changed == 1)
        #expect(report.sample.first?.attemptID == "a3")
        #expect(
            report.sample.first?.after.hits.first?.values == [
                RuleValue(name: "attempts(card, 1h)", value: .number(2)),
                RuleValue(name: "failed_otps(card, 1h)", value: .number(1)),
            ])
        #expect(report.candidateHits.map { "\($0.ruleID)=\($0.hits)" } == ["low_device=1", "retry=1", "watch=2"])
        #expect(report.transitions[.green]?[.orange] == 1)
        #expect(report.candidateUnresolved == 1, "a3 has no device score")
    }

    @Test("An attempt line's checks decide as the live path did: unknown card, expiry, pending push, reachable methods")
    func checksOfAnAttemptLine() throws {
        let attributes = #""attributes":{"card.status":"active","wallet.recommendation":"approve"}"#
        let log = try AttemptLog(
            jsonLines: [
                #"{"type":"attempt","id":"a1","time":"2025-03-01T10:00:00Z","checks":{"cardFound":false}}"#,
                #"{"type":"attempt","id":"a2","time":"2025-03-01T10:01:00Z","card_id":"c1","checks":{"expiryMatches":false},"#
                    + attributes + "}",
                #"{"type":"attempt","id":"a3","time":"2025-03-01T10:02:00Z","card_id":"c2","checks":{"pendingPush":{"attemptId":"p1","methods":["sms","app"]},"reachableMethods":["email","app"]},"#
                    + attributes + "}",
                #"{"type":"attempt","id":"a4","time":"2025-03-01T10:03:00Z","card_id":"c3","checks":{"pendingPush":{"attemptId":"p2","methods":["sms"]},"reachableMethods":["email","app"]},"#
                    + attributes + "}",
                #"{"type":"attempt","id":"a5","time":"2025-03-01T10:04:00Z","card_id":"c4","checks":null,"# + attributes
                    + "}",
            ].joined(separator: "\n"))
        #expect(log.attempts[0].checks == RequestChecks(cardFound: false))
        #expect(log.attempts[2].checks.pendingPush == .init(attemptID: "p1", methods: [.sms, .app]))
        #expect(log.attempts[4].checks == .none)
        let ruleset = try compileRules(rule("never", when: "wallet.device_score <= -1"))
        let report = Backtest.run(current: ruleset, candidate: ruleset, log: log)
        // a1 and a2 orange, a3 yellow (app is left), a4 orange (only sms, which the customer cannot get).
        #expect(report.currentMix == [.orange: 3, .yellow: 1, .green: 1])
        #expect(
            report.currentHits.map { "\($0.ruleID)=\($0.hits)" } == [
                "invariant.no_step_up_method=1", "card_not_found=1", "expiry_mismatch=1", "issuerd.in_app_yellow=2",
                "never=0",
            ])
        #expect(RequestChecks(jsonText: log.attempts[3].checks.jsonText) == log.attempts[3].checks)
        #expect(throws: AttemptLogError.self) {
            try AttemptLog(jsonLines: #"{"type":"attempt","time":"2025-03-01T10:00:00Z","checks":{"cardFound":"no"}}"#)
        }
    }

    @Test(arguments: [
        ("{\"type\":\"attempt\"}", "line 1: \"time\" must be an RFC 3339 timestamp such as 2025-03-01T12:00:00Z"),
        ("{\"type\":\"click\",\"time\":\"2025-03-01T10:00:00Z\"}", "line 1: \"type\" must be one of"),
        ("not json", "line 1: not a JSON object"),
        (
            "{\"type\":\"attempt\",\"time\":\"2025-03-01T10:00:00Z\",\"attributes\":{\"card.stauts\":\"active\"}}",
            "line 1: unknown attribute \"card.stauts\"; did you mean 'card.status'?"
        ),
        (
            "{\"type\":\"attempt\",\"time\":\"2025-03-01T10:00:00Z\",\"attributes\":{\"wallet.device_score\":\"4\"}}",
            "line 1: \"wallet.device_score\" must be a number"
        ),
        (
            "{\"type\":\"attempt\",\"time\":\"2025-03-01T10:00:00Z\",\"attributes\":{\"card.status\":\"gone\"}}",
            "line 1: \"card.status\" must be a card status"
        ),
        (
            "{\"type\":\"attempt\",\"time\":\"2025-03-01T10:00:00Z\",\"attributes\":{\"customer.phone_last4_match\":1}}",
            "line 1: \"customer.phone_last4_match\" must be a bool"
        ),
    ])
    func badLinesAreRefusedWithTheirNumber(_ line: String, _ message: String) {
        #expect(throws: AttemptLogError.self) { try AttemptLog(jsonLines: line) }
        do {
            _ = try AttemptLog(jsonLines: line)
        } catch {
            #expect(error.description.hasPrefix(message), "\(error)")
        }
    }
}
