import Foundation
import IssuerdHTTP
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// One decision function, live and replayed (`Ruleset.decide`): a replay of the serving ruleset
/// reproduces every stored flow, over a history the live paths wrote with every kind of
/// outcome (in-app, Wallet extension, Google Pay and TSP; the rules, the invariants, an unknown card, an
/// expiry mismatch, a blocked card, the wallet's decline, a pending yellow push, a yellow
/// decision the customer can receive no method of), through `rules explain`'s re-run, the
/// console's attempt route, the backtest, the export's replay, and for attempts stored before
/// the checks were recorded.
@Suite("Replay reproduces every stored decision")
struct ReplayDecisionTests {
    /// The repository's policy plus a rule stepping up in-app pushes to a watch and one allowing
    /// only SMS on the device `sms-only`.
    static func rules() throws -> String {
        let directory = TestScratch.path("issuerd-rules")
        try FileManager.default.copyItem(
            at: TestApplication.repositoryRoot.appendingPathComponent("rules"), to: directory)
        try """
        rule test.watch_push
          title   "In-app push to a watch"
          outcome yellow
          reason  TEST_WATCH_PUSH
          stepup  [sms, email, app]
          owner   test
          when    request.channel == "in_app" and device.type == "watch"
        end

        rule test.sms_only
          title   "Only a text message on this device"
          outcome yellow
          reason  TEST_SMS_ONLY
          stepup  [sms]
          owner   test
          when    device.id == "sms-only"
        end

        \(GooglePayFixtures.pushRules)
        """.write(to: directory.appendingPathComponent("policy/test.rules"), atomically: true, encoding: .utf8)
        return directory.path
    }

    static let amexPAN = "378282246310005"
    static let otherVisaPAN = "4012888888881881"
    static let otherMastercardPAN = "5555555555554444"
    static let googlePayPAN = "5105105105105100"

    /// An instance serving `rules` that can push Mastercard cards to Google Pay.
    static func app(rules: String) throws -> TestApplication {
        try TestApplication(
            environment: try GooglePayFixtures.environment(
                directory: try TestScratch.directory("issuerd-google-pay"), pgp: nil),
            rulesDirectory: rules)
    }

    /// Writes the history through the live paths; returns the TSP answers by step name.
    @discardableResult
    static func seed(_ app: TestApplication) throws -> [String: [String: Any]] {
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.customer(app, "cust-2", phone: nil)
        try DecisionFixtures.customer(app, "cust-3")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        try DecisionFixtures.card(app, "card-2", customer: "cust-2", pan: otherVisaPAN)
        try DecisionFixtures.card(
            app, "card-3", customer: "cust-1", pan: DecisionFixtures.mastercardPAN, network: "mastercard",
            status: .blocked)
        try DecisionFixtures.card(app, "card-4", customer: "cust-3", pan: amexPAN, network: "amex", status: .lost)
        try DecisionFixtures.card(
            app, "card-5", customer: "cust-2", pan: otherMastercardPAN, network: "mastercard")

        func push(_ card: String, _ customer: String, device: [String: Any], extra: [String: Any] = [:]) throws -> Int {
            var fields = extra
            fields["device"] = device
            let body = try DecisionFixtures.provisionBody(app, extra: fields)
            return try DecisionFixtures.provision(app, card: card, customer: customer, body: body).status
        }
        #expect(try push("card-1", "cust-1", device: ["id": "phone-1", "type": "phone"]) == 200)
        #expect(
            try push(
                "card-1", "cust-1", device: ["id": "phone-1", "type": "phone"], extra: ["channel": "wallet_extension"])
                == 200)
        #expect(try push("card-2", "cust-2", device: ["id": "watch-2", "type": "watch"]) == 200)  // yellow
        #expect(try push("card-3", "cust-1", device: ["id": "phone-3", "type": "phone"]) == 403)  // blocked
        #expect(try push("card-4", "cust-3", device: ["id": "phone-4", "type": "phone"]) == 403)  // lost
        // Yellow with [sms] only: the watch rule and the SMS-only one.
        #expect(try push("card-5", "cust-2", device: ["id": "sms-only", "type": "watch"]) == 200)
        // Google Pay pushes of a card of their own: green from a phone, yellow to a watch.
        try DecisionFixtures.customer(app, "cust-4")
        try DecisionFixtures.card(app, "card-6", customer: "cust-4", pan: googlePayPAN, network: "mastercard")
        for device in [["id": "pixel-6", "type": "phone"], ["id": "watch-6", "type": "watch"]] {
            let response = try GooglePayPushTests.push(app, card: "card-6", customer: "cust-4", device: device)
            #expect(response.status == 200, "\(response.text)")
        }
        // Samsung Pay pushes of the same card: green from a phone, yellow to a tablet (request.wallet).
        for device in [["id": "galaxy-6", "type": "phone"], ["id": "tab-6", "type": "tablet"]] {
            let response = try VisaPushTests.samsung(
                app, card: "card-6", customer: "cust-4", device: device, walletInfo: nil)
            #expect(response.status == 200, "\(response.text)")
        }

        let steps: [(String, String)] = [
            ("green", DecisionFixtures.authorizeBody(deviceID: "device-1")),
            ("unknown card", DecisionFixtures.authorizeBody(pan: "4242424242424242")),
            ("expiry mismatch", DecisionFixtures.authorizeBody(expiration: "11/30", deviceID: "device-1")),
            ("wallet declined", DecisionFixtures.authorizeBody(deviceID: "device-1", recommendation: "DECLINED")),
            (
                "wallet asks for authentication",
                DecisionFixtures.authorizeBody(
                    deviceID: "device-1", recommendation: "REQUIRE_ADDITIONAL_AUTHENTICATION")
            ),
            ("pending push", DecisionFixtures.authorizeBody(pan: otherVisaPAN, deviceID: "watch-2")),
            ("no method the customer has", DecisionFixtures.authorizeBody(pan: otherVisaPAN, deviceID: "sms-only")),
            (
                "pending push, no method left",
                DecisionFixtures.authorizeBody(pan: otherMastercardPAN, deviceID: "sms-only")
            ),
            ("blocked card", DecisionFixtures.authorizeBody(pan: DecisionFixtures.mastercardPAN, deviceID: "device-3")),
            ("lost card", DecisionFixtures.authorizeBody(pan: amexPAN, deviceID: "device-4")),
        ]
        var answers: [String: [String: Any]] = [:]
        for (name, body) in steps {
            let response = try app.postAsTSP("/v1/tsp/tokenization/authorize", body)
            #expect(response.status == 200, "\(name): \(response.text)")
            answers[name] = response.jsonObject() ?? [:]
        }
        return answers
    }

    struct Stored {
        var id: UUID
        var channel: String
        var flow: String
        var rules: [String]
    }

    static func stored(_ app: TestApplication) throws -> [Stored] {
        try app.pool.withConnection { connection in
            try connection.query(
                """
                SELECT attempt_id, channel, flow,
                       (SELECT coalesce(array_agg(h ->> 'rule' ORDER BY n), '{}') FROM jsonb_array_elements(a.hits) WITH ORDINALITY AS e(h, n)) AS rules
                FROM provisioning_attempts a ORDER BY created_at, attempt_id
                """
            ).map { row in
                Stored(
                    id: try row.decode("attempt_id"), channel: try row.decode("channel"), flow: try row.decode("flow"),
                    rules: try row.decode("rules"))
            }
        }
    }

    /// Every stored attempt re-run (as `rules explain` and the console do) gives its stored flow
    /// and hits; the backtest and the export's replay give the stored flows.
    static func expectReproduced(
        _ app: TestApplication, sourceLocation: Testing.SourceLocation = #_sourceLocation
    )
        throws
    {
        let ruleset = app.application.context.rules.current
        let attempts = try stored(app)
        for attempt in attempts {
            let loaded = try #require(
                try app.pool.withConnection { try StoredAttempt.load(id: attempt.id, connection: $0) },
                sourceLocation: sourceLocation)
            let replay = try loaded.replay(with: ruleset)
            #expect(
                !replay.differs && replay.decision.flow.description == attempt.flow,
                "\(attempt.channel) \(attempt.rules): stored \(attempt.flow), replayed \(replay.decision.flow)",
                sourceLocation: sourceLocation)
            #expect(
                replay.decision.hits.map(\.ruleID) == attempt.rules, "\(attempt.channel) \(attempt.flow)",
                sourceLocation: sourceLocation)
        }
        var mix: [Flow: Int] = [:]
        for attempt in attempts { mix[Flow(name: attempt.flow)!, default: 0] += 1 }
        let since = Date().addingTimeInterval(-3_600)
        let until = Date().addingTimeInterval(3_600)
        let outcome = try HistoryBacktest.run(
            current: ruleset, candidate: ruleset, since: since, until: until, limit: 1_000, database: app.pool)
        guard case .report(let report, _) = outcome else {
            Issue.record("unexpected \(outcome)", sourceLocation: sourceLocation)
            return
        }
        #expect(report.attempts == attempts.count, sourceLocation: sourceLocation)
        #expect(
            report.currentMix == mix, "backtest \(report.currentMix), stored \(mix)", sourceLocation: sourceLocation)
        #expect(report.changed == 0, sourceLocation: sourceLocation)
        // Each hit counted as stored, the checks' hits included.
        var storedHits: [String: Int] = [:]
        for attempt in attempts {
            for rule in attempt.rules { storedHits[rule, default: 0] += 1 }
        }
        let counted = Dictionary(report.currentHits.filter { $0.hits > 0 }.map { ($0.ruleID, $0.hits) }) { a, _ in a }
        #expect(counted == storedHits, sourceLocation: sourceLocation)

        let export = HistoryExport(since: since, until: until, lookbackSeconds: HistoryExport.lookback(for: [ruleset]))
        let lines = try BacktestHistoryRestrictionTests.lines(export, pool: app.pool)
        let replayed = Backtest.run(
            current: ruleset, candidate: ruleset, log: try AttemptLog(jsonLines: lines.joined(separator: "\n")))
        #expect(
            replayed.currentMix == mix, "export \(replayed.currentMix), stored \(mix)", sourceLocation: sourceLocation)
    }

    @Test(
        "A replay of the serving rules gives every stored flow: re-run, backtest and export, in-app, Wallet extension, Google Pay, Samsung Pay and TSP"
    )
    func everyStoredFlow() throws {
        let rulesDirectory = try Self.rules()
        let app = try Self.app(rules: rulesDirectory)
        let answers = try Self.seed(app)
        // The history holds each kind of outcome (else the comparison proves little).
        let attempts = try Self.stored(app)
        let rules = Set(attempts.flatMap(\.rules))
        for rule in [
            "card_not_found", "expiry_mismatch", "issuerd.in_app_yellow", "invariant.no_step_up_method",
            "invariant.wallet_declined", "invariant.wallet_requires_authentication", "invariant.card_unusable",
            "card.blocked", "test.watch_push", "test.sms_only", "test.google_watch", "test.samsung_tablet",
            "wallet.samsung_pay",
        ] {
            #expect(rules.contains(rule), "no stored hit of \(rule): \(rules)")
        }
        #expect(Set(attempts.map(\.channel)) == ["in_app", "wallet_extension", "tsp", "google_pay", "samsung_pay"])
        #expect(Set(attempts.map(\.flow)) == ["green", "yellow", "orange"])
        #expect(answers["pending push"]?["flow"] as? String == "yellow")
        #expect(answers["no method the customer has"]?["flow"] as? String == "orange")
        #expect(answers["pending push, no method left"]?["flow"] as? String == "orange")
        try Self.expectReproduced(app)

        // The console's attempt route says the same of the expiry mismatch and the unknown card.
        let analyst = try app.apiKey(role: .analyst)
        for step in ["expiry mismatch", "unknown card"] {
            let id = try #require(answers[step]?["attemptId"] as? String)
            let response = try app.client.get(
                "/v1/admin/attempts/\(id)", headers: ["Authorization": "Bearer \(analyst)"])
            let replay = try #require(response.jsonObject()?["replay"] as? [String: Any], "\(response.text)")
            #expect(replay["differs"] as? Bool == false, "\(step): \(replay)")
            #expect(replay["flow"] as? String == "orange", "\(step)")
            // And `issuerd rules explain`.
            let explained = try CommandLineRunner.run(
                ["rules", "explain", id, "--rules", rulesDirectory],
                environment: ["ISSUERD_DATABASE_URL": app.serviceConnectionString])
            #expect(explained.status == 0, "\(explained.standardError)")
            #expect(
                explained.lastLine?.hasPrefix("same outcome: orange") == true, "\(step): \(explained.standardOutput)")
        }
    }

    @Test("Attempts stored before the checks were recorded: the checks are derived from their hits")
    func olderAttempts() throws {
        let app = try Self.app(rules: try Self.rules())
        try Self.seed(app)
        let recorded = try DecisionFixtures.count(
            app, "SELECT count(*) FROM provisioning_attempts WHERE (inputs::jsonb) ? 'checks'")
        #expect(recorded == 10)  // every TSP attempt, no in-app one
        try app.pool.withConnection { connection in
            try connection.execute("UPDATE provisioning_attempts SET inputs = (inputs::jsonb - 'checks')::json")
        }
        try Self.expectReproduced(app)
    }

    @Test("A candidate's changes leave out the attempts a check declined, and count from the stored flows")
    func candidateChanges() throws {
        let app = try Self.app(rules: try Self.rules())
        try Self.seed(app)
        let current = app.application.context.rules.current
        let files =
            try app.application.context.rules.loader.files() + [
                RulesetFile(
                    path: "policy/decline_tsp.rules",
                    contents: RulesTestData.rule(
                        "test.decline_tsp", outcome: "orange", when: "request.channel == \"tsp\""))
            ]
        let candidate = try RulesetCompiler.compile(files, contentHasher: RulesetContent.fnv1a64)
        let outcome = try HistoryBacktest.run(
            current: current, candidate: candidate, since: Date().addingTimeInterval(-3_600),
            until: Date().addingTimeInterval(3_600), limit: 1_000, database: app.pool)
        guard case .report(let report, _) = outcome else {
            throw BacktestRecordedVelocityTests.TestFailure("\(outcome)")
        }
        let notDeclined = try DecisionFixtures.count(
            app, "SELECT count(*) FROM provisioning_attempts WHERE channel = 'tsp' AND flow <> 'orange'")
        #expect(notDeclined >= 2)
        #expect(report.changed == notDeclined)
        #expect(report.sample.allSatisfy { $0.before.flow != .orange && $0.after.flow == .orange })
        #expect(
            report.candidateMix[.orange]
                == (try DecisionFixtures.count(
                    app, "SELECT count(*) FROM provisioning_attempts WHERE channel = 'tsp' OR flow = 'orange'")))
    }
}
