import Foundation
import IssuerdCore
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The PostgreSQL history behind backtest, export and explain, over attempts inserted here.
@Suite("Rules over stored history: backtest endpoint, export, explain")
struct RulesHistoryTests {
    static let since = Date(timeIntervalSince1970: 1_740_823_200)  // 2025-03-01T10:00:00Z
    static let attributes =
        #"{"card.status":"active","wallet.recommendation":"approve","wallet.device_score":2,"not.an_attribute":1}"#

    /// One attempt of card c1 ten minutes before the window, three inside it a minute apart,
    /// one after it; a wrong code, a locked challenge and a deleted token inside the window.
    static func seed(_ pool: PostgresPool) throws -> [UUID] {
        try RulesTestData.insertCard("c1", customer: "u1", pool: pool)
        var ids: [UUID] = []
        for offset in [-600.0, 0, 60, 120, 7_200] {
            ids.append(
                try RulesTestData.insertAttempt(
                    at: since.addingTimeInterval(offset), card: "c1", device: "d1", customer: "u1", nameHash: "h-jane",
                    inputs: attributes,
                    pool: pool))
        }
        try pool.withConnection { connection in
            try connection.execute(
                "INSERT INTO tokens (token_reference, card_id, device_id, status) VALUES ('tok1', 'c1', 'd1', 'deleted')"
            )
            let challenge = UUID()
            try connection.execute(
                """
                INSERT INTO challenges (challenge_id, token_reference, card_id, customer_id, method, destination_masked, key_version,
                                        status, max_attempts, expires_at)
                VALUES (\(challenge), 'tok1', 'c1', 'u1', 'sms', '***-1234', 1, 'locked', 3, \(since.addingTimeInterval(600)))
                """)
            try connection.execute(
                """
                INSERT INTO challenge_failures (challenge_id, card_id, customer_id, kind, at)
                VALUES (\(challenge), 'c1', 'u1', 'wrong_code', \(since.addingTimeInterval(30))),
                       (\(challenge), 'c1', 'u1', 'locked', \(since.addingTimeInterval(40)))
                """)
            try connection.execute(
                """
                INSERT INTO token_events (token_reference, card_id, event, source, at)
                VALUES ('tok1', 'c1', 'deleted', 'tsp', \(since.addingTimeInterval(50)))
                """)
        }
        return ids
    }

    static let candidate =
        RulesTestData.rule("t.low_score", when: "wallet.device_score <= 2")
        + RulesTestData.rule("t.burst", outcome: "orange", when: "attempts(card, 1h) >= 2")

    static func backtestBody(_ rules: String, limit: Int? = nil) throws -> String {
        var body: [String: Any] = ["rules": rules, "since": "2025-03-01T10:00:00Z", "until": "2025-03-01T11:00:00Z"]
        if let limit { body["limit"] = limit }
        return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }

    @Test("The backtest endpoint replays the window with velocity as of each attempt, history before 'since' included")
    func backtestCounts() throws {
        let app = try TestApplication()
        let ids = try Self.seed(app.pool)
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let response = try app.client.postJSON(
            "/v1/admin/rules/backtest", try Self.backtestBody(Self.candidate), headers: analyst)
        #expect(response.status == 200, "\(response.text)")
        let body = try #require(response.jsonObject())
        #expect(body["attemptsEvaluated"] as? Int == 3)
        let candidate = try #require(body["candidate"] as? [String: Any])
        // Attempt 1 sees one earlier attempt (from before the window), attempts 2 and 3 see two or more.
        #expect(candidate["flows"] as? [String: Int] == ["green": 0, "yellow": 1, "orange": 2])
        #expect(candidate["ruleHits"] as? [String: Int] == ["t.low_score": 3, "t.burst": 2])
        let current = try #require(body["current"] as? [String: Any])
        #expect(current["version"] as? String == app.application.context.rules.current.version)
        let flows = try #require(current["flows"] as? [String: Int])
        #expect(flows.values.reduce(0, +) == 3)
        let window = try #require(body["window"] as? [String: Any])
        #expect(window["historyFrom"] as? String != window["since"] as? String)
        let changes = try #require(body["changedAttempts"] as? [[String: Any]])
        #expect(body["changed"] as? Int == changes.count)
        let windowIDs = Set(ids[1...3].map { $0.uuidString.lowercased() })
        #expect(changes.allSatisfy { windowIDs.contains($0["attemptId"] as? String ?? "") })
        #expect(changes.contains { $0["after"] as? String == "orange" })
    }

    @Test("A second run of the same window answers the same report, its complete hour taken from memory")
    func backtestKeepsHours() throws {
        let app = try TestApplication()
        _ = try Self.seed(app.pool)
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let first = try app.client.postJSON(
            "/v1/admin/rules/backtest", try Self.backtestBody(Self.candidate), headers: analyst)
        #expect(first.status == 200, "\(first.text)")
        var metrics = try app.client.get("/metrics").text
        #expect(metrics.contains(#"issuerd_backtest_cache_hours_total{result="miss"} 1"#), "\(metrics)")
        #expect(metrics.contains("issuerd_backtest_cache_attempts 3"), "\(metrics)")
        let second = try app.client.postJSON(
            "/v1/admin/rules/backtest", try Self.backtestBody(Self.candidate), headers: analyst)
        #expect(second.status == 200, "\(second.text)")
        #expect(
            NSDictionary(dictionary: try #require(second.jsonObject()))
                == NSDictionary(dictionary: try #require(first.jsonObject())))
        metrics = try app.client.get("/metrics").text
        #expect(metrics.contains(#"issuerd_backtest_cache_hours_total{result="hit"} 1"#), "\(metrics)")
    }

    static let prepareBody = #"{"since":"2025-03-01T10:00:00Z","until":"2025-03-01T11:00:00Z"}"#

    /// Waits until `count` preparations have ended (the last one's end also clears `isRunning`
    /// when nothing waits behind it: both change under one lock).
    static func waitForPreparations(_ preparation: BacktestPreparation, count: Int) throws {
        guard RulesTestData.eventually(within: 60, { preparation.finishedCount >= count }) else {
            throw TestTimeout("the preparation did not end")
        }
    }

    struct TestTimeout: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Holds `provisioning_attempts` under an exclusive lock, then asks `app` to read the 10:00
    /// hour ahead, and returns once that read waits on the lock (ROLLBACK the connection to let it go).
    static func holdReadAheadOnLock(_ app: TestApplication, headers: [String: String]) throws -> PostgresConnection {
        let holder = try PostgresConnection(connectionString: app.database.connectionString)
        try holder.execute("BEGIN")
        try holder.execute("LOCK TABLE provisioning_attempts IN ACCESS EXCLUSIVE MODE")
        let prepared = try app.client.postJSON("/v1/admin/rules/backtest/prepare", prepareBody, headers: headers)
        #expect(prepared.jsonObject()?["started"] as? Bool == true, "\(prepared.text)")
        let (waiting, activity) = try app.database.waitUntilBlocked(by: holder.backendProcessID, within: 120)
        #expect(waiting, "the read-ahead never waited on the lock: \(activity)")
        return holder
    }

    @Test("Preparing a period reads it ahead: the backtest that follows takes its complete hour from memory")
    func prepareThenBacktest() throws {
        let app = try TestApplication()
        _ = try Self.seed(app.pool)
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let prepared = try app.client.postJSON("/v1/admin/rules/backtest/prepare", Self.prepareBody, headers: analyst)
        #expect(prepared.status == 202, "\(prepared.text)")
        #expect(prepared.jsonObject()?["started"] as? Bool == true)
        try Self.waitForPreparations(app.application.context.backtestPreparation, count: 1)
        var metrics = try app.client.get("/metrics").text
        #expect(metrics.contains("issuerd_backtest_cache_attempts 3"), "\(metrics)")
        #expect(metrics.contains(#"issuerd_backtest_cache_hours_total{result="hit"} 0"#), "\(metrics)")
        let response = try app.client.postJSON(
            "/v1/admin/rules/backtest", try Self.backtestBody(Self.candidate), headers: analyst)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.jsonObject()?["attemptsEvaluated"] as? Int == 3)
        metrics = try app.client.get("/metrics").text
        #expect(metrics.contains(#"issuerd_backtest_cache_hours_total{result="hit"} 1"#), "\(metrics)")
        // The report of a server keeping nothing, over the same database.
        let uncached = try TestApplication(environment: ["ISSUERD_BACKTEST_CACHE_ATTEMPTS": "0"], sharing: app)
        let plain = try uncached.client.postJSON(
            "/v1/admin/rules/backtest", try Self.backtestBody(Self.candidate), headers: analyst)
        #expect(plain.status == 200, "\(plain.text)")
        #expect(
            NSDictionary(dictionary: try #require(plain.jsonObject()))
                == NSDictionary(dictionary: try #require(response.jsonObject())))
    }

    @Test(
        "One preparation at a time: requests while one runs wait, the latest replacing the others; none with the cache off"
    )
    func prepareOneAtATime() throws {
        let app = try TestApplication()
        _ = try Self.seed(app.pool)
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let cache = app.application.context.backtestCache
        let noon = Int64(Self.since.timeIntervalSince1970 / 3_600) + 2  // 12:00, no attempts
        // Hold the first one on a lock of the attempts table.
        let holder = try Self.holdReadAheadOnLock(app, headers: analyst)
        // Two more while it waits: 12:00-13:00, then 13:00-14:00, which replaces it.
        for body in [
            #"{"since":"2025-03-01T12:00:00Z","until":"2025-03-01T13:00:00Z"}"#,
            #"{"since":"2025-03-01T13:00:00Z","until":"2025-03-01T14:00:00Z"}"#,
        ] {
            let queued = try app.client.postJSON("/v1/admin/rules/backtest/prepare", body, headers: analyst)
            #expect(queued.status == 202)
            #expect(queued.jsonObject()?["started"] as? Bool == true, "\(queued.text)")
        }
        #expect(app.application.context.backtestPreparation.finishedCount == 0)
        try holder.execute("ROLLBACK")
        try Self.waitForPreparations(app.application.context.backtestPreparation, count: 2)
        #expect(!app.application.context.backtestPreparation.isRunning)
        #expect(app.application.context.backtestPreparation.finishedCount == 2)
        #expect(cache.lookup((noon - 2)...(noon - 2)).count == 1, "the first period (10:00) is kept")
        #expect(cache.lookup(noon...noon).isEmpty, "the replaced request (12:00) never ran")
        #expect(cache.lookup((noon + 1)...(noon + 1)).count == 1, "the latest (13:00) ran")

        // Nothing to read: a period without a complete hour, or the cache off.
        let partial = try app.client.postJSON(
            "/v1/admin/rules/backtest/prepare", #"{"since":"2025-03-01T10:10:00Z","until":"2025-03-01T10:50:00Z"}"#,
            headers: analyst)
        #expect(partial.jsonObject()?["started"] as? Bool == false, "\(partial.text)")
        let off = try TestApplication(environment: ["ISSUERD_BACKTEST_CACHE_ATTEMPTS": "0"])
        let offKey = ["Authorization": "Bearer \(try off.apiKey(role: .analyst))"]
        let refused = try off.client.postJSON("/v1/admin/rules/backtest/prepare", Self.prepareBody, headers: offKey)
        #expect(refused.status == 202)
        #expect(refused.jsonObject()?["started"] as? Bool == false, "\(refused.text)")
    }

    @Test("A backtest sent while the read-ahead of its period runs waits for it, then takes the hour from memory")
    func backtestWaitsForTheReadAhead() throws {
        let app = try TestApplication()
        _ = try Self.seed(app.pool)
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let holder = try Self.holdReadAheadOnLock(app, headers: analyst)
        let preparation = app.application.context.backtestPreparation
        let body = try Self.backtestBody(Self.candidate)
        let backtest = BackgroundCall { try app.client.postJSON("/v1/admin/rules/backtest", body, headers: analyst) }
        // The backtest waits in issuerd for the read-ahead of its period (not on the lock beside it).
        _ = RulesTestData.eventually(within: 60) { preparation.waitCount > 0 }
        #expect(preparation.waitCount == 1, "the backtest did not wait for the read-ahead")
        try holder.execute("ROLLBACK")
        let response = try #require(backtest.result(within: 60), "the backtest did not answer").get()
        #expect(response.status == 200, "\(response.text)")
        let metrics = try app.client.get("/metrics").text
        #expect(metrics.contains(#"issuerd_backtest_cache_hours_total{result="hit"} 1"#), "\(metrics)")
    }

    @Test("A period the hourly roll-up shows over the limit is not read ahead; within it, it is")
    func prepareSkipsPeriodsOverTheLimit() throws {
        let app = try TestApplication()
        _ = try Self.seed(app.pool)
        // Roll up the seeded history (3 attempts at 10:00-11:00), as a console page view does.
        _ = try ConsoleRollup.catchUp(now: Self.since.addingTimeInterval(86_400), database: app.pool)
        let cache = BacktestWindowCache(capacity: 1_000)
        let preparation = BacktestPreparation(
            cache: cache, database: app.pool,
            logger: Logger(label: "t", minimumLevel: .critical, handler: DiscardingLogHandler()))
        let current = app.application.context.rules.current
        let later = Self.since.addingTimeInterval(86_400)
        func prepared(limit: Int) throws {
            let before = preparation.finishedCount
            #expect(
                preparation.start(
                    current: current, since: Self.since, until: Self.since.addingTimeInterval(3_600), limit: limit,
                    now: later))
            try Self.waitForPreparations(preparation, count: before + 1)
        }
        try prepared(limit: 2)
        #expect(cache.statistics.misses == 0, "the attempts were read although the roll-up shows 3 > 2")
        #expect(cache.statistics.hours == 0)
        try prepared(limit: 3)
        #expect(cache.statistics.misses == 1)
        #expect(cache.statistics.attempts == 3)
    }

    @Test("Prepare refusals: a malformed or reversed period, no key, a role that does not backtest")
    func prepareRefusals() throws {
        let app = try TestApplication()
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let malformed = try app.client.postJSON(
            "/v1/admin/rules/backtest/prepare", #"{"since":"yesterday","until":"2025-03-01T11:00:00Z"}"#,
            headers: analyst)
        #expect(malformed.status == 400, "\(malformed.text)")
        let reversed = try app.client.postJSON(
            "/v1/admin/rules/backtest/prepare", #"{"since":"2025-03-02T00:00:00Z","until":"2025-03-01T00:00:00Z"}"#,
            headers: analyst)
        #expect(reversed.status == 400, "\(reversed.text)")
        let missing = try app.client.postJSON(
            "/v1/admin/rules/backtest/prepare", #"{"since":"2025-03-01T10:00:00Z"}"#, headers: analyst)
        #expect(missing.status == 400, "\(missing.text)")
        #expect(try app.client.postJSON("/v1/admin/rules/backtest/prepare", Self.prepareBody).status == 401)
        let ivr = ["Authorization": "Bearer \(try app.apiKey(role: .ivr))"]
        #expect(
            try app.client.postJSON("/v1/admin/rules/backtest/prepare", Self.prepareBody, headers: ivr).status == 403)
        #expect(app.application.context.backtestPreparation.finishedCount == 0)
        #expect(!app.application.context.backtestPreparation.isRunning)
    }

    @Test("Backtest refusals: a candidate that does not compile, a window over the limit, a reversed window, no key")
    func backtestRefusals() throws {
        let app = try TestApplication()
        _ = try Self.seed(app.pool)
        let admin = ["Authorization": "Bearer \(try app.apiKey(role: .admin))"]
        let broken = try app.client.postJSON(
            "/v1/admin/rules/backtest",
            try Self.backtestBody(RulesTestData.rule("t.bad", when: "attempts(card, 1h) >= \"x\"")), headers: admin)
        #expect(broken.status == 422)
        let error = try #require(broken.errorEnvelope())
        #expect(error["code"] as? String == "ruleset_invalid")
        #expect((error["detail"] as? String)?.hasPrefix("candidate.rules:6:") == true)
        #expect((error["diagnostics"] as? [[String: Any]])?.first?["line"] as? Int == 6)

        let tooMany = try app.client.postJSON(
            "/v1/admin/rules/backtest", try Self.backtestBody(Self.candidate, limit: 2), headers: admin)
        #expect(tooMany.status == 422)
        #expect(tooMany.errorEnvelope()?["code"] as? String == "backtest_too_large")
        #expect(tooMany.errorEnvelope()?["attempts"] as? Int == 3)

        let reversed = try app.client.postJSON(
            "/v1/admin/rules/backtest", #"{"rules":"x","since":"2025-03-02T00:00:00Z","until":"2025-03-01T00:00:00Z"}"#,
            headers: admin)
        #expect(reversed.status == 400)
        #expect(reversed.errorEnvelope()?["code"] as? String == "invalid_request")
        let escape = try app.client.postJSON(
            "/v1/admin/rules/backtest",
            #"{"rules":{"../etc/x.rules":"x"},"since":"2025-03-01T00:00:00Z","until":"2025-03-02T00:00:00Z"}"#,
            headers: admin)
        #expect(escape.status == 400)
        #expect(
            try app.client.postJSON("/v1/admin/rules/backtest", try Self.backtestBody(Self.candidate)).status == 401)
    }

    @Test("An overlay candidate replaces one file and keeps the rest of the directory")
    func overlayCandidate() throws {
        let app = try TestApplication()
        _ = try Self.seed(app.pool)
        let admin = ["Authorization": "Bearer \(try app.apiKey(role: .admin))"]
        let body =
            #"{"rules":{"policy/zz_extra.rules":"\#(Self.candidate.replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n"))"},"since":"2025-03-01T10:00:00Z","until":"2025-03-01T11:00:00Z"}"#
        let response = try app.client.postJSON("/v1/admin/rules/backtest", body, headers: admin)
        #expect(response.status == 200, "\(response.text)")
        let rules = try #require((response.jsonObject()?["candidate"] as? [String: Any])?["rules"] as? [[String: Any]])
        let ids = Set(rules.compactMap { $0["id"] as? String })
        #expect(ids.isSuperset(of: Set(app.application.context.rules.current.rules.map(\.id))))
        #expect(ids.contains("t.burst"))
    }

    @Test(
        "`issuerd rules backtest --since/--until` over PostgreSQL prints the report the endpoint gives; bad windows are refused"
    )
    func commandLineBacktest() throws {
        let app = try TestApplication()
        _ = try Self.seed(app.pool)
        // The candidate: the served rules plus one file, as the endpoint's overlay builds it.
        let rules = TestApplication.repositoryRoot.appendingPathComponent("rules")
        let candidate = app.directory.appendingPathComponent("candidate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: app.directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: rules, to: candidate)
        try Data(Self.candidate.utf8).write(to: candidate.appendingPathComponent("policy/zz_extra.rules"))
        let environment = ["ISSUERD_DATABASE_URL": app.serviceConnectionString]
        let window = ["--since", "2025-03-01T10:00:00Z", "--until", "2025-03-01T11:00:00Z"]
        let result = try CommandLineRunner.run(
            ["rules", "backtest", "--candidate", candidate.path, "--current", rules.path] + window,
            environment: environment)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.contains("backtest: 3 attempts replayed"), "\(result.standardError)")

        let admin = ["Authorization": "Bearer \(try app.apiKey(role: .admin))"]
        let overlay =
            #"{"rules":{"policy/zz_extra.rules":"\#(Self.candidate.replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n"))"},"since":"2025-03-01T10:00:00Z","until":"2025-03-01T11:00:00Z"}"#
        let response = try app.client.postJSON("/v1/admin/rules/backtest", overlay, headers: admin)
        #expect(response.status == 200, "\(response.text)")
        let body = try #require(response.jsonObject())
        let flows = try #require((body["candidate"] as? [String: Any])?["flows"] as? [String: Int])
        let before = try #require((body["current"] as? [String: Any])?["flows"] as? [String: Int])
        // The printed table: "flow  current  candidate", one line per flow.
        for flow in ["green", "yellow", "orange"] {
            let line =
                result.standardOutput.split(separator: "\n").first { $0.hasPrefix(flow + " ") }.map(String.init) ?? ""
            let numbers = line.split(separator: " ").compactMap { Int($0) }
            #expect(numbers == [before[flow] ?? -1, flows[flow] ?? -1], "\(flow): \(line)")
        }
        #expect(result.standardOutput.contains("changed: \(body["changed"] as? Int ?? -1) attempts"))
        #expect(result.standardOutput.contains("t.burst"))

        // Without --current: what issuerd serves (ISSUERD_RULES_DIR), and the first line says so.
        let served = app.application.context.rules.current.version
        let byDefault = try CommandLineRunner.run(
            ["rules", "backtest", "--candidate", candidate.path] + window,
            environment: environment.merging(["ISSUERD_RULES_DIR": rules.path]) { $1 })
        #expect(byDefault.status == 0, "\(byDefault.standardError)")
        let first = byDefault.standardOutput.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.hasPrefix("comparing current \(served) (\(rules.path), what issuerd serves"), "\(first)")
        #expect(first.hasSuffix("(\(candidate.path))") && first.contains("with candidate sha256:"), "\(first)")
        #expect(byDefault.standardOutput.contains("changed: \(body["changed"] as? Int ?? -1) attempts"))

        let reversed = try CommandLineRunner.run(
            [
                "rules", "backtest", "--candidate", candidate.path, "--since", "2025-03-02T00:00:00Z", "--until",
                "2025-03-01T00:00:00Z",
            ],
            environment: environment)
        #expect(reversed.status != 0)
        #expect(reversed.standardError.contains("--since must be before --until"), "\(reversed.standardError)")
        let tooMany = try CommandLineRunner.run(
            ["rules", "backtest", "--candidate", candidate.path, "--current", rules.path, "--limit", "2"] + window,
            environment: environment)
        #expect(tooMany.status != 0)
        #expect(
            tooMany.standardError.contains("the window holds 3 attempts, more than --limit 2"),
            "\(tooMany.standardError)")
        let noDatabase = try CommandLineRunner.run(
            ["rules", "backtest", "--candidate", candidate.path] + window, environment: [:])
        #expect(noDatabase.status != 0)
        #expect(noDatabase.standardError.contains("ISSUERD_DATABASE_URL is not set"), "\(noDatabase.standardError)")
    }

    @Test("The export reads back as an AttemptLog: replayed attempts, history-only attempts and every event kind")
    func exportRoundTrip() throws {
        let app = try TestApplication()
        let ids = try Self.seed(app.pool)
        let export = HistoryExport(
            since: Self.since, until: Self.since.addingTimeInterval(3_600), lookbackSeconds: 3_600)
        var lines: [String] = []
        let written = try app.pool.withConnection { connection in
            #expect(try export.attemptCount(connection: connection) == 3)
            return try export.write(connection: connection) { lines.append($0) }
        }
        #expect(written == lines.count)
        let log = try AttemptLog(jsonLines: lines.joined(separator: "\n"))
        #expect(log.attempts.map(\.id) == ids[1...3].map { $0.uuidString.lowercased() })
        #expect(log.attempts.allSatisfy { $0.input.walletDeviceScore == 2 && $0.input.cardStatus == .active })
        #expect(log.attempts.first?.subject == VelocitySubject(cardID: "c1", deviceID: "d1", customerID: "u1"))
        #expect(log.attempts.first?.time == Self.since)
        let kinds = log.events.map(\.kind)
        #expect(kinds.filter { $0 == .attempt }.count == 4)
        #expect(kinds.filter { $0 == .otpFailure }.count == 1)
        #expect(kinds.filter { $0 == .stepUpFailure }.count == 1)
        #expect(kinds.filter { $0 == .tokenDeletion }.count == 1)
        #expect(log.events.first { $0.kind == .tokenDeletion }?.deviceID == "d1")
        #expect(log.events.first { $0.kind == .attempt }?.cardholderName == "h-jane")
        #expect(lines.contains { $0.contains(#""replay":false"#) && $0.contains(ids[0].uuidString.lowercased()) })
        #expect(!lines.contains { $0.contains("not.an_attribute") })
    }

    @Test("Explain loads a stored attempt and re-runs it with today's rules and the stored features")
    func explain() throws {
        let app = try TestApplication()
        try RulesTestData.insertCard("c9", customer: "u9", pool: app.pool)
        let id = try RulesTestData.insertAttempt(
            at: Date(), card: "c9", device: "d9", customer: "u9", inputs: Self.attributes,
            features: #"{"attempts(card, 24h)": 7, "attempts(card, 72h)": 7}"#, hits: "[]", flow: "green",
            pool: app.pool)
        let attempt = try #require(try app.pool.withConnection { try StoredAttempt.load(id: id, connection: $0) })
        #expect(attempt.flow == "green")
        #expect(attempt.subject.cardID == "c9")
        let ruleset = app.application.context.rules.current
        let replay = try attempt.replay(with: ruleset)
        #expect(replay.decision.flow == .orange)
        #expect(
            replay.decision.hits.contains {
                $0.ruleID == "velocity.card_burst"
                    && $0.values == [RuleValue(name: "attempts(card, 24h)", value: .number(7))]
            })
        #expect(replay.differs)
        #expect(!replay.missingFeatures.contains("attempts(card, 24h)"))
        #expect(replay.missingFeatures.count == ruleset.velocityQueries.count - 2)
        #expect(try app.pool.withConnection { try StoredAttempt.load(id: UUID(), connection: $0) } == nil)
    }

    @Test("Stored features are read as an object or as an array of query/value pairs")
    func featureShapes() {
        let unknown: Int? = nil
        #expect(StoredAttempt.features(#"{"a": 1, "b": null, "c": "x"}"#) == ["a": 1, "b": unknown])
        #expect(
            StoredAttempt.features(#"[{"query": "a", "value": 2.0}, {"name": "b", "value": null}]"#) == [
                "a": 2, "b": unknown,
            ])
        #expect(StoredAttempt.features("not json").isEmpty)
    }
}
