import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The analysts' reads on a read database (`ISSUERD_READ_DATABASE_URL`): a real streaming hot
/// standby of a private primary, cloned with `pg_basebackup -R` before the test database exists
/// (so its creation and migrations reach the standby by replication, as in production).
@Suite("Analysts' reads on a streaming replica")
struct ReadReplicaTests {
    static let window = "since=2025-03-01T10:00:00Z&until=2025-03-01T11:00:00Z"

    /// A primary, its standby, a migrated database on them, and an instance writing on the
    /// primary and reading the analysts' pages on the standby.
    final class ReplicatedApp {
        let primary: DisposablePostgresServer
        let standby: DisposablePostgresServer
        let app: TestApplication
        /// The superuser on the test database, on either server.
        let onPrimary: PostgresConnection
        let onStandby: PostgresConnection

        init(standbySettings: [String] = [], environment: [String: String] = [:]) throws {
            let primary = try DisposablePostgresServer()
            self.primary = primary
            do {
                standby = try DisposablePostgresServer(standbyOf: primary, settings: standbySettings)
            } catch {
                primary.destroy()
                throw error
            }
            do {
                let database = try TestDatabase.create(admin: primary.connectionString)
                let readURL = try PostgresConnectionString(standby.connectionString).setting(
                    "dbname", to: database.name
                )
                .setting("user", to: TestServiceRole.name).unsafeConnectionString
                app = try TestApplication(
                    environment: environment.merging(["ISSUERD_READ_DATABASE_URL": readURL]) { _, new in new },
                    database: database)
                onPrimary = try PostgresConnection(connectionString: database.connectionString)
                onStandby = try PostgresConnection(
                    connectionString: try PostgresConnectionString(standby.connectionString)
                        .setting("dbname", to: database.name).unsafeConnectionString)
            } catch {
                standby.destroy()
                primary.destroy()
                throw error
            }
        }

        deinit {
            standby.destroy()
            primary.destroy()
        }

        /// The primary's current WAL position.
        func primaryPosition() throws -> String {
            try onPrimary.query("SELECT pg_current_wal_lsn()::text AS lsn").first!.decode("lsn")
        }

        /// Waits until the standby has replayed (or, with `received`, received) everything the
        /// primary has written so far.
        func waitForStandby(received: Bool = false) throws {
            let position = try primaryPosition()
            let function = received ? "pg_last_wal_receive_lsn()" : "pg_last_wal_replay_lsn()"
            let caughtUp = try RulesTestData.eventually(within: 30) {
                try onStandby.query(
                    "SELECT coalesce(\(unsafeSQL: function) >= \(position)::pg_lsn, false) AS done"
                ).first!.decode("done", as: Bool.self)
            }
            try #require(caughtUp, "the standby did not reach \(position)")
        }

        func pauseReplay() throws { try onStandby.execute("SELECT pg_wal_replay_pause()") }
        func resumeReplay() throws { try onStandby.execute("SELECT pg_wal_replay_resume()") }
    }

    static func count(_ connection: PostgresConnection, _ sql: String) throws -> Int {
        Int(try connection.query(.init(unsafeSQL: sql)).first!.decode(0, as: Int64.self))
    }

    /// The attempt ids the attempts page lists for the window.
    static func listed(_ app: TestApplication, _ headers: [String: String]) throws -> [String] {
        let page = try app.client.get("/v1/admin/attempts?\(window)&limit=100", headers: headers)
        try #require(page.status == 200, "\(page.text)")
        let attempts = try #require(page.jsonObject()?["attempts"] as? [[String: Any]])
        return attempts.compactMap { $0["attemptId"] as? String }
    }

    /// What the analyst's pages and exports say about the window.
    struct AnalystView: Equatable {
        var listed: Set<String>
        var exported: Set<String>
        var decisions: Int
        var backtested: Int
        var jobReplayed: Int
    }

    static func analystView(_ app: TestApplication, _ headers: [String: String]) throws -> AnalystView {
        let csv = try app.client.get("/v1/admin/attempts?\(window)&format=csv", headers: headers)
        try #require(csv.status == 200, "\(csv.text)")
        let exported = Set(csv.text.split(whereSeparator: \.isNewline).dropFirst().map { String($0.prefix(36)) })
        let decisions = try app.client.get("/v1/admin/decisions?\(window)", headers: headers)
        try #require(decisions.status == 200, "\(decisions.text)")
        let totals = try #require(decisions.jsonObject()?["totals"] as? [String: Any])
        let backtest = try app.client.postJSON(
            "/v1/admin/rules/backtest", try RulesHistoryTests.backtestBody(RulesHistoryTests.candidate),
            headers: headers)
        try #require(backtest.status == 200, "\(backtest.text)")
        let started = try app.client.postJSON(
            "/v1/admin/rules/backtest/jobs", try BacktestJobTests.jobBody(), headers: headers)
        let id = try #require(started.jsonObject()?["id"] as? String, "\(started.text)")
        let job = try BacktestJobTests.finished(app, "/v1/admin/rules/backtest/jobs/\(id)", headers: headers)
        return AnalystView(
            listed: Set(try listed(app, headers)), exported: exported,
            decisions: ["green", "yellow", "orange"].reduce(0) { $0 + ((totals[$1] as? Int) ?? 0) },
            backtested: backtest.jsonObject()?["attemptsEvaluated"] as? Int ?? -1,
            jobReplayed: (job["progress"] as? [String: Any])?["replayed"] as? Int ?? -1)
    }

    static func metric(_ app: TestApplication, _ line: String) throws -> Double? {
        let text = try app.client.get("/metrics").text
        guard let found = text.split(separator: "\n").first(where: { $0.hasPrefix(line + " ") }) else { return nil }
        return Double(found.split(separator: " ").last ?? "")
    }

    @Test(
        "With replay paused, console pages, exports and backtests miss a fresh write (they read the standby) while a live decision and an analyst's write use the primary; the lag is reported"
    )
    func routing() throws {
        let cluster = try ReplicatedApp()
        let app = cluster.app
        let ids = try RulesHistoryTests.seed(app.pool)
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        try cluster.waitForStandby()
        let inWindow = Set(ids[1...3].map { $0.uuidString.lowercased() })
        // Page views roll completed hours up (on the primary), newest first, within a time budget
        // each: view until the window's hour is rolled up, so what the chart counts is fixed.
        var before = try Self.analystView(app, analyst)
        for _ in 0..<30
        where try Self.count(
            cluster.onPrimary, "SELECT count(*) FROM console_rollup_state WHERE rolled_from <= '2025-03-01T10:00:00Z'")
            == 0
        {
            before = try Self.analystView(app, analyst)
        }
        try cluster.waitForStandby()
        before = try Self.analystView(app, analyst)
        #expect(
            before == AnalystView(listed: inWindow, exported: inWindow, decisions: 3, backtested: 3, jobReplayed: 3))

        try cluster.pauseReplay()
        // A new attempt in the window, as the decision path stores it (on the primary).
        let fresh = try RulesTestData.insertAttempt(
            at: RulesHistoryTests.since.addingTimeInterval(1_800), card: "c1", device: "d1", customer: "u1",
            nameHash: "h-jane", inputs: RulesHistoryTests.attributes, pool: app.pool)
        // A card that exists only on the primary: a live decision finds it (the standby does not have it).
        try DecisionFixtures.customer(app, "cust-replica")
        try DecisionFixtures.card(app, "card-replica", customer: "cust-replica")
        let decided = try app.postAsTSP("/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody())
        #expect(decided.status == 200, "\(decided.text)")
        #expect(decided.jsonObject()?["decision"] as? String == "APPROVED", "\(decided.text)")
        // An analyst's write goes to the primary (the standby would refuse it).
        let reported = try app.client.postJSON(
            "/v1/admin/outcomes",
            #"{"outcomes":[{"attemptId":"\#(ids[1].uuidString.lowercased())","outcome":"fraud","source":"analyst"}]}"#,
            headers: analyst)
        #expect(reported.status == 200, "\(reported.text)")
        #expect(reported.jsonObject()?["recorded"] as? Int == 1, "\(reported.text)")
        #expect(
            try Self.count(
                cluster.onPrimary, "SELECT count(*) FROM attempt_outcomes WHERE attempt_id = '\(ids[1].uuidString)'")
                == 1)
        try cluster.waitForStandby(received: true)

        // The analyst sees the history as the paused standby has it.
        #expect(try Self.analystView(app, analyst) == before)
        let freshID = fresh.uuidString.lowercased()
        #expect(try app.client.get("/v1/admin/attempts/\(freshID)", headers: analyst).status == 404)
        let detail = try app.client.get("/v1/admin/attempts/\(ids[1].uuidString.lowercased())", headers: analyst)
        #expect(detail.status == 200, "\(detail.text)")
        #expect(detail.jsonObject()?["outcome"] is NSNull, "\(detail.text)")
        #expect(
            try Self.count(
                cluster.onPrimary,
                "SELECT count(*) FROM provisioning_attempts WHERE created_at >= '2025-03-01T10:00:00Z' AND created_at < '2025-03-01T11:00:00Z'"
            ) == 4)

        // The lag: on the console's read API and as a metric.
        let reads = try app.client.get("/v1/admin/reads", headers: analyst)
        #expect(reads.status == 200, "\(reads.text)")
        let lag = try #require(reads.jsonObject())
        #expect(lag["source"] as? String == "replica")
        #expect(lag["reachable"] as? Bool == true)
        #expect(lag["standby"] as? Bool == true)
        #expect(lag["replayPaused"] as? Bool == true)
        let behind = try #require(lag["lagSeconds"] as? Double, "\(reads.text)")
        #expect(behind > 0)
        #expect(try Self.metric(app, "issuerd_read_replica_up") == 1)
        #expect((try Self.metric(app, "issuerd_read_replica_lag_seconds") ?? 0) > 0)

        // Replay resumed: everything is there, and the lag is gone.
        try cluster.resumeReplay()
        try cluster.waitForStandby()
        let after = try Self.analystView(app, analyst)
        let all = inWindow.union([freshID])
        // The Decisions chart counts the window's hour from its roll-up, made before the pause:
        // an attempt written into a completed hour afterwards (which the decision path never
        // does: it stamps the present) is not recounted.
        #expect(after == AnalystView(listed: all, exported: all, decisions: 3, backtested: 4, jobReplayed: 4))
        let reported1 = try app.client.get("/v1/admin/attempts/\(ids[1].uuidString.lowercased())", headers: analyst)
        #expect((reported1.jsonObject()?["outcome"] as? [String: Any])?["outcome"] as? String == "fraud")
        let caughtUp = try #require(try app.client.get("/v1/admin/reads", headers: analyst).jsonObject())
        #expect(caughtUp["replayPaused"] as? Bool == false)
        #expect(caughtUp["lagSeconds"] as? Double == 0 || caughtUp["lagSeconds"] as? Int == 0)
    }

    @Test(
        "A query a real standby cancels (a recovery conflict: its lock was in the replay's way) is run again and answered, never 500"
    )
    func recoveryConflict() throws {
        // The standby cancels a conflicting query at once instead of delaying replay.
        // A read waits on the standby for as long as the test holds the lock: no client deadline.
        let cluster = try ReplicatedApp(
            standbySettings: ["max_standby_streaming_delay=0"], environment: ["ISSUERD_DB_STATEMENT_TIMEOUT": "600s"])
        let app = cluster.app
        _ = try RulesHistoryTests.seed(app.pool)
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        try cluster.waitForStandby()
        // The command line too: before anything was rolled up, `rules performance` reading on the
        // standby writes its roll-ups on the primary (the standby refuses writes).
        let command = try CommandLineRunner.run(
            [
                "rules", "performance", "--since", "2025-03-01T10:00:00Z", "--until", "2025-03-01T11:00:00Z",
                "--rules", TestApplication.repositoryRoot.appendingPathComponent("rules").path,
            ],
            environment: [
                "ISSUERD_DATABASE_URL": app.serviceConnectionString,
                "ISSUERD_READ_DATABASE_URL": try #require(app.application.configuration.readDatabaseURL).unsafeValue,
            ])
        #expect(command.status == 0, "\(command.standardError)")
        let performance = "/v1/admin/rules/performance?\(Self.window)"
        #expect(try app.client.get(performance, headers: analyst).status == 200)

        // The primary holds attempt_outcomes locked: the standby's replay holds the same lock, so
        // rule performance's read (in one snapshot: attempts first, then outcomes) waits there on
        // the standby while holding its lock on provisioning_attempts.
        let holder = cluster.onPrimary
        try holder.execute("BEGIN")
        try holder.execute("LOCK TABLE attempt_outcomes IN ACCESS EXCLUSIVE MODE")
        let other = try PostgresConnection(connectionString: app.database.connectionString)
        try other.execute("SET lock_timeout = '20s'")
        _ = try other.query("SELECT txid_current()")  // a commit: the lock's record is flushed and sent
        try cluster.waitForStandby()
        let replayed = try RulesTestData.eventually(within: 30) {
            try Self.count(
                cluster.onStandby,
                "SELECT count(*) FROM pg_locks WHERE relation = 'attempt_outcomes'::regclass AND mode = 'AccessExclusiveLock'"
            ) == 1
        }
        try #require(replayed, "the standby's replay does not hold the primary's lock")

        /// Waits until a session of the standby (the analyst's read) waits for attempt_outcomes
        /// while holding its lock on provisioning_attempts.
        func readerWaits(_ call: BackgroundCall<TestHTTPResponse>) throws {
            let waiting = try RulesTestData.eventually(within: 30) {
                try Self.count(
                    cluster.onStandby,
                    """
                    SELECT count(*) FROM pg_locks w JOIN pg_locks h ON h.pid = w.pid
                    WHERE NOT w.granted AND w.relation = 'attempt_outcomes'::regclass
                      AND h.granted AND h.relation = 'provisioning_attempts'::regclass
                    """) >= 1
            }
            let locks = try cluster.onStandby.query(
                "SELECT pid::text || ' ' || coalesce(relation::regclass::text, locktype) || ' ' || mode || ' ' || granted::text AS l FROM pg_locks"
            ).map { try $0.decode("l", as: String.self) }
            let ended = call.result(within: 0).map { result in
                (try? result.get()).map { "\($0.status) \($0.text.prefix(80))" } ?? "\(result)"
            }
            let activity = try cluster.onStandby.query(
                "SELECT pid::text || ' ' || coalesce(wait_event_type, '-') || ' ' || coalesce(state, '-') || ' ' || left(query, 60) AS a FROM pg_stat_activity WHERE datname = current_database()"
            ).map { try $0.decode("a", as: String.self) }
            let retried = try Self.metric(app, #"issuerd_read_conflicts_total{result="retried"}"#)
            try #require(
                waiting,
                "no analyst read waited on the standby; its locks: \(locks); sessions: \(activity); retried: \(retried.map { String($0) } ?? "-"); the request: \(ended ?? "running")"
            )
        }
        /// Replays a lock the waiting read conflicts with: the standby cancels it.
        func conflict(_ call: BackgroundCall<TestHTTPResponse>, expecting retried: Double) throws {
            try readerWaits(call)
            try other.execute("BEGIN")
            try other.execute("LOCK TABLE provisioning_attempts IN ACCESS EXCLUSIVE MODE")
            try other.execute("COMMIT")
            let counted = try RulesTestData.eventually(within: 30) {
                try Self.metric(app, #"issuerd_read_conflicts_total{result="retried"}"#) == retried
            }
            try #require(counted, "the read was not cancelled and run again")
        }

        // Cancelled once (its lock on provisioning_attempts was in the way of the replay), run
        // again, and answered once the primary lets go.
        let once = BackgroundCall { try app.client.get(performance, headers: analyst) }
        try conflict(once, expecting: 1)
        try holder.execute("ROLLBACK")
        let answered = try #require(once.result(within: 60), "the request did not end").get()
        #expect(answered.status == 200, "\(answered.text)")
        #expect((answered.jsonObject()?["totals"] as? [String: Any])?["attempts"] as? Int == 3, "\(answered.text)")
        #expect(try Self.metric(app, #"issuerd_read_conflicts_total{result="refused"}"#) == 0)
    }

    @Test("A read cancelled twice by the read database is 503 with Retry-After; other failures are left alone")
    func conflictTwice() throws {
        let app = try TestApplication()
        let context = app.application.context
        // What PostgreSQL reports: 40001 for a cancelled statement, 40P01 for a deadlock with the
        // replay, 57P04 for a session ended because its database was dropped.
        for sqlState in ["40001", "40P01", "57P04"] {
            var runs = 0
            let conflict = PostgresError(
                code: PostgresError.code(forSQLState: sqlState), sqlState: sqlState,
                message: "canceling statement due to conflict with recovery")
            #expect(conflict.isRecoveryConflict)
            let answer = try context.analystRead {
                runs += 1
                if runs == 1 { throw conflict }
                return "read"
            }
            #expect(answer == "read" && runs == 2)
            runs = 0
            do {
                _ = try context.analystRead { () throws -> String in
                    runs += 1
                    throw conflict
                }
                Issue.record("a read cancelled twice was not refused")
            } catch let refusal as HTTPError {
                #expect(refusal.status == 503)
                #expect(refusal.headers["Retry-After"] == "1")
                #expect(refusal.code == "database_unavailable")
            }
            #expect(runs == 2)
        }
        #expect(try Self.metric(app, #"issuerd_read_conflicts_total{result="retried"}"#) == 6)
        #expect(try Self.metric(app, #"issuerd_read_conflicts_total{result="refused"}"#) == 3)
        // Anything else is not run again.
        var runs = 0
        #expect(throws: PostgresError.self) {
            try context.analystRead { () throws -> Int in
                runs += 1
                throw PostgresError(code: .syntax, sqlState: "42P01", message: "relation does not exist")
            }
        }
        #expect(runs == 1)
    }

    @Test("A read database that does not answer: the analysts' reads are 503, live decisions and readiness unaffected")
    func unreachableReadDatabase() throws {
        let unreachable = "postgresql:///issuerd_none?host=/nonexistent-\(UUID().uuidString)&connect_timeout=2"
        let app = try TestApplication(environment: ["ISSUERD_READ_DATABASE_URL": unreachable])
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        for path in ["/v1/admin/decisions?\(Self.window)", "/v1/admin/attempts?\(Self.window)", "/v1/admin/rules"] {
            let answer = try app.client.get(path, headers: analyst)
            #expect(answer.status == 503, "\(path): \(answer.text)")
            #expect(answer.header("Retry-After") == "1")
            #expect(answer.errorEnvelope()?["code"] as? String == "database_unavailable")
        }
        let backtest = try app.client.postJSON(
            "/v1/admin/rules/backtest", try RulesHistoryTests.backtestBody(RulesHistoryTests.candidate),
            headers: analyst)
        #expect(backtest.status == 503, "\(backtest.text)")
        let reads = try #require(try app.client.get("/v1/admin/reads", headers: analyst).jsonObject())
        #expect(reads["source"] as? String == "replica")
        #expect(reads["reachable"] as? Bool == false)
        #expect(try Self.metric(app, "issuerd_read_replica_up") == 0)
        #expect(try app.client.get("/readyz").status == 200)
        let decided = try app.postAsTSP("/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody())
        #expect(decided.status == 200, "\(decided.text)")
    }

    @Test("Without a read database the reads are on the primary, and GET /v1/admin/reads says so")
    func primaryOnly() throws {
        let app = try TestApplication()
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let reads = try #require(try app.client.get("/v1/admin/reads", headers: analyst).jsonObject())
        #expect(reads["source"] as? String == "primary")
        #expect(reads["lagSeconds"] as? Int == 0)
        #expect(try app.client.get("/v1/admin/reads").status == 401)
        // The series are there anyway: the primary is never behind itself.
        #expect(try Self.metric(app, "issuerd_read_replica_up") == 1)
        #expect(try Self.metric(app, "issuerd_read_replica_lag_seconds") == 0)
    }
}
