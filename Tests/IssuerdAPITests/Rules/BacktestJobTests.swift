import Foundation
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The console's backtests as background jobs: started, polled, cancelled, their changed
/// attempts downloaded as CSV; and `issuerd rules backtest --changed-csv`.
@Suite("Backtest jobs and the export of changed attempts")
struct BacktestJobTests {
    static let since = RulesHistoryTests.since
    static let candidate = RulesHistoryTests.candidate

    static func jobBody(until: String = "2025-03-01T11:00:00Z") throws -> String {
        let body: [String: Any] = ["rules": candidate, "since": "2025-03-01T10:00:00Z", "until": until]
        return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }

    /// Polls the job until it is no longer running.
    static func finished(_ app: TestApplication, _ path: String, headers: [String: String]) throws -> [String: Any] {
        var job: [String: Any] = [:]
        _ = try RulesTestData.eventually {
            job = try app.client.get(path, headers: headers).jsonObject() ?? [:]
            return job["state"] as? String != "running"
        }
        return job
    }

    @Test(
        "A job's report is the synchronous backtest's, and its CSV lists every changed attempt with the card's last four"
    )
    func jobReportAndCSV() throws {
        let app = try TestApplication()
        let ids = try RulesHistoryTests.seed(app.pool)
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let started = try app.client.postJSON("/v1/admin/rules/backtest/jobs", try Self.jobBody(), headers: analyst)
        #expect(started.status == 202, "\(started.text)")
        let id = try #require(started.jsonObject()?["id"] as? String)
        #expect(started.header("Location") == "/v1/admin/rules/backtest/jobs/\(id)")
        let job = try Self.finished(app, "/v1/admin/rules/backtest/jobs/\(id)", headers: analyst)
        #expect(job["state"] as? String == "done", "\(job)")
        #expect((job["progress"] as? [String: Any])?["fraction"] as? Double == 1)
        #expect((job["progress"] as? [String: Any])?["replayed"] as? Int == 3)
        let report = try #require(job["report"] as? [String: Any])
        let direct = try #require(
            try app.client.postJSON(
                "/v1/admin/rules/backtest", try RulesHistoryTests.backtestBody(Self.candidate), headers: analyst
            ).jsonObject())
        for field in ["attemptsEvaluated", "changed", "transitions", "current", "candidate", "changedAttempts"] {
            #expect(
                NSDictionary(dictionary: report).value(forKey: field) as? NSObject == NSDictionary(dictionary: direct)
                    .value(forKey: field) as? NSObject, "\(field)")
        }
        let changed = try #require(report["changed"] as? Int)
        #expect(changed >= 2, "t.burst turns the second and third attempts orange")

        let csvInfo = try #require(job["changedCsv"] as? [String: Any])
        #expect(csvInfo["rows"] as? Int == changed)
        #expect(csvInfo["truncated"] as? Bool == false)
        let csv = try app.client.get(try #require(csvInfo["href"] as? String), headers: analyst)
        #expect(csv.status == 200)
        #expect(csv.header("Content-Type")?.hasPrefix("text/csv") == true)
        #expect(csv.header("Content-Disposition")?.hasPrefix("attachment") == true)
        let lines = csv.text.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(lines.first == "attempt_id,time,channel,card_last_four,before,after,rules")
        #expect(lines.count == changed + 1, "\(lines)")
        // Window attempts, in time order, each with its stored channel and the card's last four.
        let window = ids[1...3].map { $0.uuidString.lowercased() }
        let listed = lines.dropFirst().map { String($0.prefix(36)) }
        #expect(listed == window.filter { listed.contains($0) }, "\(listed)")
        #expect(lines.dropFirst().allSatisfy { $0.contains(",tsp,1111,") })
        let last = try #require(lines.last)
        #expect(last.hasPrefix("\(window[2]),2025-03-01T10:02:00.000Z,tsp,1111,"), "\(last)")
        #expect(last.contains(",orange,") && last.contains("candidate: ") && last.contains("t.burst"), "\(last)")
        // No cell holds a card number (cell by cell: a random attempt id's digits run on across separators).
        for line in lines {
            #expect(
                !line.split(separator: ",").contains { ChangedAttemptsCSV.containsCardNumber(String($0)) }, "\(line)")
        }
    }

    @Test("Jobs are their owner's: another key gets 404, as for an id that does not exist; a job not done has no CSV")
    func ownersOnly() throws {
        let app = try TestApplication()
        _ = try RulesHistoryTests.seed(app.pool)
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let other = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let started = try app.client.postJSON("/v1/admin/rules/backtest/jobs", try Self.jobBody(), headers: analyst)
        let id = try #require(started.jsonObject()?["id"] as? String)
        for (method, path) in [
            ("GET", "/v1/admin/rules/backtest/jobs/\(id)"), ("DELETE", "/v1/admin/rules/backtest/jobs/\(id)"),
            ("GET", "/v1/admin/rules/backtest/jobs/\(id)/changed.csv"),
            ("GET", "/v1/admin/rules/backtest/jobs/\(UUID().uuidString.lowercased())"),
        ] {
            let response = try app.client.send(method, path, headers: other)
            #expect(response.status == 404, "\(method) \(path): \(response.text)")
            #expect(response.errorEnvelope()?["code"] as? String == "backtest_job_not_found")
        }
        #expect(try app.client.get("/v1/admin/rules/backtest/jobs/\(id)").status == 401)
        _ = try Self.finished(app, "/v1/admin/rules/backtest/jobs/\(id)", headers: analyst)
        // A bad candidate is refused at once, as the synchronous route refuses it.
        let bad = try app.client.postJSON(
            "/v1/admin/rules/backtest/jobs",
            #"{"rules":"rule x\n","since":"2025-03-01T10:00:00Z","until":"2025-03-01T11:00:00Z"}"#,
            headers: analyst)
        #expect(bad.status == 422)
        #expect(bad.errorEnvelope()?["code"] as? String == "ruleset_invalid")

        // Not done: 409 for the CSV (through the registry, where a job can be held running).
        let jobs = BacktestJobs(gate: BacktestGate(), logger: app.application.context.logger)
        let held = try jobs.start(
            owner: "apikey:x", current: app.application.context.rules.current,
            candidate: app.application.context.rules.current, since: Self.since,
            until: Self.since.addingTimeInterval(3_600), limit: 10, database: app.pool, cache: nil, now: Date(),
            before: { Thread.sleep(forTimeInterval: 1) })
        guard case .failure(let error)? = jobs.csv(id: held.id, owner: "apikey:x") else {
            Issue.record("a running job gave its CSV")
            return
        }
        #expect(error.state == .running)
        jobs.stop(timeout: 20)
    }

    @Test("Cancelling stops a run at its next slice: HistoryBacktest throws Cancelled, a job ends cancelled")
    func cancelling() throws {
        let app = try TestApplication()
        _ = try RulesHistoryTests.seed(app.pool)
        let current = app.application.context.rules.current
        let candidate = try RulesetCompiler.compile(
            [RulesetFile(path: "c.rules", contents: Self.candidate)], contentHasher: RulesetContent.fnv1a64)
        // Over a day: the first slice is an hour, so a cancel after it stops the run.
        let control = HistoryBacktest.Control()
        var lines: [String] = []
        #expect(throws: HistoryBacktest.Cancelled.self) {
            _ = try HistoryBacktest.run(
                current: current, candidate: candidate, since: Self.since, until: Self.since.addingTimeInterval(86_400),
                limit: 100, database: app.pool, control: control
            ) { line in
                lines.append(line)
                if line.contains("attempts replayed") { control.cancel() }
            }
        }
        #expect(control.progress?.replayed == 3)
        #expect(control.progress.map { $0.fraction < 1 } == true, "stopped before the end: \(lines)")

        // Through the API: a cancel of a job, whichever comes first, leaves it cancelled or done, never running.
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let started = try app.client.postJSON(
            "/v1/admin/rules/backtest/jobs", try Self.jobBody(until: "2025-03-20T00:00:00Z"), headers: analyst)
        let id = try #require(started.jsonObject()?["id"] as? String)
        let cancel = try app.client.send("DELETE", "/v1/admin/rules/backtest/jobs/\(id)", headers: analyst)
        #expect(cancel.status == 202, "\(cancel.text)")
        let job = try Self.finished(app, "/v1/admin/rules/backtest/jobs/\(id)", headers: analyst)
        #expect(["cancelled", "done"].contains(job["state"] as? String ?? ""), "\(job)")
        if job["state"] as? String == "cancelled" {
            let csv = try app.client.get("/v1/admin/rules/backtest/jobs/\(id)/changed.csv", headers: analyst)
            #expect(csv.status == 409)
        }
    }

    @Test("`issuerd rules backtest --changed-csv` writes the changed attempts, mode 0600, and no partial file")
    func commandLineCSV() throws {
        let app = try TestApplication()
        let ids = try RulesHistoryTests.seed(app.pool)
        let rules = TestApplication.repositoryRoot.appendingPathComponent("rules")
        let candidate = try RulesTestData.copyOfRules()
        try Data(Self.candidate.utf8).write(to: candidate.appendingPathComponent("policy/zz_extra.rules"))
        let output = TestScratch.path("changed.csv")
        let result = try CommandLineRunner.run(
            [
                "rules", "backtest", "--candidate", candidate.path, "--current", rules.path, "--since",
                "2025-03-01T10:00:00Z", "--until", "2025-03-01T11:00:00Z", "--changed-csv", output.path,
            ],
            environment: ["ISSUERD_DATABASE_URL": app.serviceConnectionString])
        #expect(result.status == 0, "\(result.standardError)")
        let text = try String(contentsOf: output, encoding: .utf8)
        let lines = text.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(lines.first == ChangedAttemptsCSV.header.trimmingCharacters(in: .newlines))
        let changed = result.standardOutput.split(separator: "\n").first { $0.hasPrefix("changed: ") }
        #expect(changed == "changed: \(lines.count - 1) attempts", "\(result.standardOutput)")
        #expect(lines.count > 1)
        #expect(lines.dropFirst().allSatisfy { $0.contains(",tsp,1111,") })
        #expect(lines.dropFirst().allSatisfy { line in ids.contains { line.hasPrefix($0.uuidString.lowercased()) } })
        let mode = try FileManager.default.attributesOfItem(atPath: output.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(!FileManager.default.fileExists(atPath: output.path + ".partial"))
        #expect(result.standardError.contains("changed attempts written to"), "\(result.standardError)")

        let help = try CommandLineRunner.run(["rules", "backtest", "--help"], environment: [:])
        #expect(help.standardOutput.contains("--changed-csv FILE"))
    }
}
