import Foundation
import IssuerdCore
import IssuerdHistory
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("Rule performance matches an independent SQL computation over the same rows")
struct RulePerformanceTests {
    static let count = 240

    /// 240 attempts an hour apart over ten days, five shapes of hits, tokens on the yellow ones
    /// (a third activated), and outcomes: reported fraud with amounts, legitimate, fraud
    /// overruled by a later legitimate report, and unconfirmed network signals.
    static func seed(_ app: TestApplication, now: Date) throws -> (since: Date, until: Date) {
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c1", card: "card-1", serial: 1)
        try app.pool.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, inputs, features, hits, flow,
                                                   decision, ruleset_version, created_at)
                SELECT md5('perf' || i)::uuid, 'in_app', 'card-1', 'c1', '{}', '{}',
                       (CASE i % 5
                          WHEN 0 THEN '[{"rule":"a.orange","outcome":"orange","mode":"live","values":[]}]'
                          WHEN 1 THEN '[{"rule":"c.yellow","outcome":"yellow","mode":"live","values":[]},{"rule":"s.orange","outcome":"orange","mode":"shadow","values":[]}]'
                          WHEN 2 THEN '[]'
                          WHEN 3 THEN '[{"rule":"s.orange","outcome":"orange","mode":"shadow","values":[]},{"rule":"s.yellow","outcome":"yellow","mode":"shadow","values":[]}]'
                          ELSE '[{"rule":"c.yellow","outcome":"yellow","mode":"live","values":[]},{"rule":"a.orange","outcome":"orange","mode":"live","values":[]}]'
                        END)::jsonb
                       || (CASE WHEN i % 10 = 0 THEN '[{"rule":"card_not_found","outcome":"orange","mode":"live","values":[]}]' ELSE '[]' END)::jsonb,
                       (ARRAY['orange', 'yellow', 'green', 'green', 'orange'])[1 + i % 5], 'X', 'v1',
                       \(now) - make_interval(hours => (i + 1)::int)
                FROM generate_series(0, \(count - 1)) i
                """)
            try connection.execute(
                """
                INSERT INTO tokens (token_reference, card_id, status, attempt_id)
                SELECT 'tok-' || i, 'card-1', CASE WHEN i % 3 = 0 THEN 'active' ELSE 'pending_verification' END,
                       md5('perf' || i)::uuid
                FROM generate_series(0, \(count - 1)) i WHERE i % 5 = 1
                """)
            // The activations of the tokens that stay active (not deleted below), from seconds
            // to hours after the decision (times in many buckets of the step-up roll-up, some
            // sharing one), with fractions.
            try connection.execute(
                """
                INSERT INTO token_events (token_reference, card_id, event, source, at, recorded_at)
                SELECT 'tok-' || i, 'card-1', 'activated', 'issuer',
                       \(now) - make_interval(hours => (i + 1)::int)
                           + make_interval(secs => (CASE WHEN i % 4 = 0 THEN 600.25 ELSE (i * 7919) % 20000 + 0.125 END)),
                       \(now)
                FROM generate_series(0, \(count - 1)) i WHERE i % 5 = 1 AND i % 3 = 0 AND NOT (i % 7 >= 3 AND i % 2 = 0)
                """)
        }
        let ids = try app.pool.withConnection { connection in
            try connection.query(
                "SELECT md5('perf' || i)::uuid::text AS id FROM generate_series(0, \(count - 1)) i ORDER BY i"
            )
            .map { try $0.decode("id", as: String.self) }
        }
        var reports: [String] = []
        for i in 0..<count {
            let id = ids[i]
            switch i % 7 {
            case 0:
                reports.append(
                    #"{"attemptId":"\#(id)","outcome":"fraud","source":"chargeback","reportedAt":"2026-11-01T00:00:00Z","amountLost":{"value":\#(1000 * i),"currency":"KRW"}}"#
                )
            case 1:
                reports.append(#"{"attemptId":"\#(id)","outcome":"legitimate","source":"cardholder"}"#)
            case 2:
                reports.append(
                    #"{"attemptId":"\#(id)","outcome":"fraud","source":"analyst","reportedAt":"2026-11-01T00:00:00Z"}"#)
                reports.append(
                    #"{"attemptId":"\#(id)","outcome":"legitimate","source":"analyst","reportedAt":"2026-11-02T00:00:00Z"}"#
                )
            default: break
            }
        }
        let posted = try app.client.postJSON(
            "/v1/admin/outcomes", #"{"outcomes":[\#(reports.joined(separator: ","))]}"#,
            headers: AdminFixtures.bearer(admin))
        #expect(posted.jsonObject()?["recorded"] as? Int == reports.count)
        // Unconfirmed network signals on some yellow attempts' tokens.
        for i in stride(from: 1, to: count, by: 5) where i % 7 >= 3 && i % 2 == 0 {
            let event =
                #"{"tokenReference":"tok-\#(i)","event":"deleted","at":"2026-11-03T00:00:00Z","reason":"fraud"}"#
            #expect(try app.postAsTSP("/v1/tsp/token-events", event).status == 204)
        }
        return (now.addingTimeInterval(-11 * 86_400), now)
    }

    struct Oracle: Equatable {
        var hits = 0
        var decided = 0
        var fraud = 0
        var legitimate = 0
        var started = 0
        var completed = 0
    }

    /// The oracle: written apart from issuerd's queries. The label is the newest confirmed report
    /// (not the stored current mark); "decided" is spelt out per flow; hits are found by JSON path.
    static func oracle(
        _ app: TestApplication, since: Date, until: Date
    ) throws -> (
        rules: [String: Oracle], fraud: Int, passedGreen: Int, attempts: Int, mature: Int
    ) {
        try app.pool.withConnection { connection in
            var rules: [String: Oracle] = [:]
            for (rule, mode) in [
                ("a.orange", "live"), ("c.yellow", "live"), ("card_not_found", "live"), ("s.orange", "shadow"),
                ("s.yellow", "shadow"),
            ] {
                let row = try connection.query(
                    """
                    WITH l AS (
                        SELECT a.attempt_id, a.flow,
                               (SELECT o.outcome FROM attempt_outcomes o WHERE o.attempt_id = a.attempt_id AND o.confirmed
                                ORDER BY o.reported_at DESC, o.id DESC LIMIT 1) AS label,
                               jsonb_path_query_first(a.hits, '$[*] ? (@.rule == $r && @.mode == $m)',
                                                      jsonb_build_object('r', \(rule)::text, 'm', \(mode)::text)) AS hit
                        FROM provisioning_attempts a
                        WHERE a.created_at >= \(since) AND a.created_at < \(until)
                    ), d AS (
                        SELECT l.*, (flow = 'orange' AND hit ->> 'outcome' = 'orange')
                                    OR (flow = 'yellow' AND hit ->> 'outcome' IN ('yellow', 'orange')) AS decided
                        FROM l WHERE hit IS NOT NULL
                    )
                    SELECT (SELECT count(*) FROM d)::int AS hits,
                           (SELECT count(*) FROM d WHERE decided)::int AS decided,
                           (SELECT count(*) FROM d WHERE decided AND label = 'fraud')::int AS fraud,
                           (SELECT count(*) FROM d WHERE decided AND label = 'legitimate')::int AS legitimate,
                           (SELECT count(*) FROM d JOIN tokens t ON t.attempt_id = d.attempt_id
                            WHERE decided AND d.flow = 'yellow')::int AS started,
                           (SELECT count(*) FROM d JOIN tokens t ON t.attempt_id = d.attempt_id
                            WHERE decided AND d.flow = 'yellow' AND t.status = 'active')::int AS completed
                    """
                ).first!
                rules["\(mode) \(rule)"] = Oracle(
                    hits: try row.decode("hits"), decided: try row.decode("decided"), fraud: try row.decode("fraud"),
                    legitimate: try row.decode("legitimate"), started: try row.decode("started"),
                    completed: try row.decode("completed"))
            }
            let totals = try connection.query(
                """
                WITH l AS (
                    SELECT a.flow, a.created_at,
                           (SELECT o.outcome FROM attempt_outcomes o WHERE o.attempt_id = a.attempt_id AND o.confirmed
                            ORDER BY o.reported_at DESC, o.id DESC LIMIT 1) AS label
                    FROM provisioning_attempts a WHERE a.created_at >= \(since) AND a.created_at < \(until))
                SELECT (SELECT count(*) FROM l)::int AS attempts,
                       (SELECT count(*) FROM l WHERE label = 'fraud')::int AS fraud,
                       (SELECT count(*) FROM l WHERE label = 'fraud' AND flow = 'green')::int AS green,
                       (SELECT count(*) FROM l WHERE created_at <= \(until) - interval '5 days')::int AS mature
                """
            ).first!
            return (
                rules, try totals.decode("fraud"), try totals.decode("green"), try totals.decode("attempts"),
                try totals.decode("mature")
            )
        }
    }

    /// Equal up to the JSON text's rounding of a double.
    private func close(_ value: Any?, _ expected: Double) -> Bool {
        guard let value = value as? Double else { return false }
        return abs(value - expected) < 1e-12
    }

    @Test("Hits, decisions, fraud, legitimate, precision, recall, missed fraud, step-ups and totals agree")
    func matchesOracle() throws {
        let now = Date()
        let app = try TestApplication(environment: ["ISSUERD_OUTCOMES_LABEL_MATURITY": "5d"])
        let (since, until) = try Self.seed(app, now: now)
        let oracle = try Self.oracle(app, since: since, until: until)
        #expect(oracle.fraud > 0 && oracle.passedGreen > 0)

        let analyst = try app.apiKey(role: .analyst)
        let response = try app.client.get(
            "/v1/admin/rules/performance?since=\(RFC3339.string(since))&until=\(RFC3339.string(until))",
            headers: AdminFixtures.bearer(analyst))
        #expect(response.status == 200, "\(response.text)")
        let body = try #require(response.jsonObject())
        let totals = try #require(body["totals"] as? [String: Any])
        #expect(totals["attempts"] as? Int == oracle.attempts)
        #expect(totals["fraud"] as? Int == oracle.fraud)
        #expect(totals["fraudPassedGreen"] as? Int == oracle.passedGreen)
        #expect(close(totals["labelMaturity"], Double(oracle.mature) / Double(oracle.attempts)))
        let rules = try #require(body["rules"] as? [[String: Any]])
        for (key, expected) in oracle.rules {
            let row = try #require(
                rules.first { "\($0["mode"] as? String ?? "") \($0["ruleId"] as? String ?? "")" == key }, "\(key)")
            let measured = Oracle(
                hits: row["hits"] as? Int ?? -1, decided: row["decided"] as? Int ?? -1,
                fraud: row["fraud"] as? Int ?? -1,
                legitimate: row["legitimate"] as? Int ?? -1, started: row["stepUpsStarted"] as? Int ?? -1,
                completed: row["stepUpsCompleted"] as? Int ?? -1)
            #expect(measured == expected, "\(key)")
            let labelled = expected.fraud + expected.legitimate
            if labelled == 0 {
                #expect(row["precision"] is NSNull, "\(key)")
            } else {
                #expect(close(row["precision"], Double(expected.fraud) / Double(labelled)), "\(key)")
            }
            #expect(close(row["recall"], Double(expected.fraud) / Double(oracle.fraud)), "\(key)")
            #expect(row["missedFraud"] as? Int == oracle.fraud - expected.fraud, "\(key)")
            #expect(row["unlabelled"] as? Int == expected.decided - labelled, "\(key)")
        }
        // The serving rules without hits are listed with zeros.
        #expect(rules.contains { $0["hits"] as? Int == 0 })

        // The command line prints the same figures.
        let environment = [
            "ISSUERD_DATABASE_URL": app.serviceConnectionString, "ISSUERD_OUTCOMES_LABEL_MATURITY": "5d",
        ]
        let arguments = [
            "rules", "performance", "--since", RFC3339.string(since), "--until", RFC3339.string(until), "--rules",
            TestApplication.repositoryRoot.appendingPathComponent("rules").path,
        ]
        let json = try CommandLineRunner.run(arguments + ["--json"], environment: environment)
        #expect(json.status == 0, "\(json.standardError)")
        let printed = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        #expect((printed["totals"] as? [String: Any])?["fraud"] as? Int == oracle.fraud)
        #expect((printed["rules"] as? [[String: Any]])?.count == rules.count)
        let text = try CommandLineRunner.run(arguments, environment: environment)
        #expect(text.status == 0)
        #expect(text.lastLine?.hasPrefix("totals: attempts=\(oracle.attempts) fraud=\(oracle.fraud) ") == true)
        #expect(text.standardOutput.contains("c.yellow"))
    }

    @Test(
        "The same figures whether the hourly roll-ups cover none, part or all of the period, and a read brings them up to date"
    )
    func sameFiguresFromRollups() throws {
        let now = Date()
        let app = try TestApplication()
        let (since, until) = try Self.seed(app, now: now)
        let oracle = try Self.oracle(app, since: since, until: until)
        // Before the history (nothing rolled up), in its middle, and days after (all of it,
        // step-ups included once their wait has passed).
        for readAt in [
            since.addingTimeInterval(-86_400), now.addingTimeInterval(-5 * 86_400 - 1_234),
            now.addingTimeInterval(3 * 86_400),
        ] {
            let performance = try app.pool.withConnection { connection in
                try RulePerformance.read(
                    since: since, until: until, ruleset: nil, maturity: .seconds(86_400), stepUpWait: .seconds(86_400),
                    now: readAt, connection: connection)
            }
            #expect(performance.totals.attempts == oracle.attempts, "at \(readAt)")
            #expect(performance.totals.fraud == oracle.fraud, "at \(readAt)")
            #expect(performance.totals.fraudPassedGreen == oracle.passedGreen, "at \(readAt)")
            for (key, expected) in oracle.rules {
                let rule = try #require(performance.rules.first { "\($0.mode) \($0.ruleId)" == key }, "\(key)")
                let measured = Oracle(
                    hits: rule.hits, decided: rule.decided, fraud: rule.fraud, legitimate: rule.legitimate,
                    started: rule.stepUpsStarted, completed: rule.stepUpsCompleted)
                #expect(measured == expected, "\(key) at \(readAt)")
            }
            // Both roll-ups were brought up to `readAt`: hits to its last complete hour, step-ups
            // to the last hour whose wait has passed.
            let state = try app.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT (SELECT rolled_until FROM console_rollup_state) AS hits,
                           (SELECT rolled_until FROM console_stepup_rollup_state) AS stepups
                    """
                ).first!
            }
            let hour = { (date: Date) in ConsoleRollup.floorHour(date.addingTimeInterval(-ConsoleRollup.lag)) }
            #expect(
                try state.decode("hits", as: Date?.self) == max(hour(readAt), hour(since.addingTimeInterval(-86_400))))
            #expect(
                try state.decode("stepups", as: Date?.self)
                    == max(hour(readAt.addingTimeInterval(-86_400)), hour(since.addingTimeInterval(-2 * 86_400))))
        }
    }

    @Test(
        "Each outcome keeps its attempt's flow and hits; outcomes recorded without them are read through their attempt, with the same figures"
    )
    func outcomesCopyTheirAttempt() throws {
        let now = Date()
        let app = try TestApplication()
        let (since, until) = try Self.seed(app, now: now)
        let oracle = try Self.oracle(app, since: since, until: until)
        let copies = try app.pool.withConnection { connection in
            try connection.query(
                """
                SELECT count(*)::int AS n,
                       count(*) FILTER (WHERE o.attempt_flow = a.flow AND o.attempt_hits = a.hits)::int AS copied
                FROM attempt_outcomes o JOIN provisioning_attempts a ON a.attempt_id = o.attempt_id
                """
            ).first!
        }
        #expect(try copies.decode("n", as: Int.self) > 0)
        #expect(try copies.decode("copied", as: Int.self) == (try copies.decode("n", as: Int.self)))
        // Half the outcomes as an older writer leaves them (no copy), and one whose attempt is
        // gone: it counts nowhere, as when the attempt was read.
        try app.pool.withConnection { connection in
            try connection.execute(
                "UPDATE attempt_outcomes SET attempt_flow = NULL, attempt_hits = NULL WHERE id % 2 = 0")
            try connection.execute(
                """
                INSERT INTO attempt_outcomes (attempt_id, outcome, source, confirmed, reported_at, note, recorded_by,
                                              recorded_at, is_current, attempt_created_at)
                VALUES (gen_random_uuid(), 'fraud', 'chargeback', true, \(now), '', 'test', \(now), true,
                        \(now.addingTimeInterval(-3_600)))
                """)
        }
        let performance = try app.pool.withConnection { connection in
            try RulePerformance.read(
                since: since, until: until, ruleset: nil, maturity: .seconds(86_400), now: now, connection: connection)
        }
        #expect(performance.totals.fraud == oracle.fraud)
        #expect(performance.totals.fraudPassedGreen == oracle.passedGreen)
        for (key, expected) in oracle.rules {
            let rule = try #require(performance.rules.first { "\($0.mode) \($0.ruleId)" == key }, "\(key)")
            #expect(rule.fraud == expected.fraud && rule.legitimate == expected.legitimate, "\(key)")
        }
    }

    @Test("Figures read from the roll-ups equal those read from the attempts, the median completion time too")
    func rolledUpEqualsRaw() throws {
        let now = Date()
        let app = try TestApplication()
        let (since, until) = try Self.seed(app, now: now)
        let read = { (readAt: Date) in
            try app.pool.withConnection { connection in
                try RulePerformance.read(
                    since: since, until: until, ruleset: nil, maturity: .seconds(86_400), stepUpWait: .seconds(86_400),
                    now: readAt, connection: connection)
            }
        }
        // An even count of completion times (a median between two), one completed step-up
        // without its time.
        try app.pool.withConnection { connection in
            try connection.execute("DELETE FROM token_events WHERE token_reference = 'tok-21' AND event = 'activated'")
        }
        // Nothing rolled up: every figure from the attempts.
        let raw = try read(since.addingTimeInterval(-86_400))
        // The median the attempts give, by PostgreSQL's percentile_cont over each completion.
        let oracle = try app.pool.withConnection { connection in
            try connection.query(
                """
                SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM e.at - a.created_at)::float8) AS median,
                       count(*)::int AS n
                FROM provisioning_attempts a JOIN tokens t ON t.attempt_id = a.attempt_id
                JOIN token_events e ON e.token_reference = t.token_reference AND e.event = 'activated'
                WHERE a.flow = 'yellow' AND a.hits @> '[{"rule":"c.yellow","outcome":"yellow","mode":"live"}]'
                  AND a.created_at >= \(since) AND a.created_at < \(until)
                """
            ).first!
        }
        let yellow = try #require(raw.rules.first { $0.ruleId == "c.yellow" })
        #expect(try oracle.decode("n", as: Int.self) == 10)
        #expect(yellow.stepUpMedianSeconds == (try oracle.decode("median", as: Double?.self)))
        #expect(yellow.stepUpMedianSeconds != nil)
        // Part of the period rolled up, then all of it (step-ups too, their wait passed): the
        // same figures for every rule, to the bit.
        for readAt in [now.addingTimeInterval(-5 * 86_400 - 1_234), now.addingTimeInterval(3 * 86_400)] {
            let rolled = try read(readAt)
            #expect(rolled.rules == raw.rules, "at \(readAt)")
            #expect(rolled.totals.attempts == raw.totals.attempts && rolled.totals.fraud == raw.totals.fraud)
        }
        let stepUps = try app.pool.withConnection { connection in
            try connection.query(
                "SELECT count(*)::int AS n, coalesce(sum(cardinality(seconds)), 0)::int AS times FROM console_hourly_stepups"
            ).first!
        }
        // The roll-up holds the ten times of each rule deciding those step-ups (live c.yellow,
        // shadow s.orange): the median was read from it.
        #expect(try stepUps.decode("times", as: Int.self) == 20)
    }
}
