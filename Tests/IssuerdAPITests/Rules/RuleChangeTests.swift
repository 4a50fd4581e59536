import Foundation
import IssuerdAuth
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Rule changes under control: every reload audited with the person, both versions, the git
/// commit and the rule-level diff; maker-checker with `ISSUERD_RULES_APPROVAL=required` over
/// two live instances on one database.
@Suite("Rule changes: audit, proposal, approval")
struct RuleChangeTests {
    static let commit = "3f1c2a9b7d5e4f60718293a4b5c6d7e8f9012345"

    /// A copy of the repository's rules inside a fake git checkout whose last commit is Grace Hopper's.
    static func rulesInGit() throws -> (root: URL, rules: URL) {
        let root = TestScratch.path("issuerd-rules-git")
        let git = root.appendingPathComponent(".git")
        try FileManager.default.createDirectory(
            at: git.appendingPathComponent("refs/heads"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: git.appendingPathComponent("logs"), withIntermediateDirectories: true)
        try "ref: refs/heads/main\n".write(to: git.appendingPathComponent("HEAD"), atomically: true, encoding: .utf8)
        try "\(commit)\n".write(to: git.appendingPathComponent("refs/heads/main"), atomically: true, encoding: .utf8)
        try
            "\(String(repeating: "0", count: 40)) \(commit) Grace Hopper <grace@example.com> 1700000000 +0000\tcommit: rules\n"
            .write(to: git.appendingPathComponent("logs/HEAD"), atomically: true, encoding: .utf8)
        let rules = root.appendingPathComponent("rules")
        try FileManager.default.copyItem(
            at: TestApplication.repositoryRoot.appendingPathComponent("rules"), to: rules)
        return (root, rules)
    }

    static func key(_ app: TestApplication, _ role: APIKeyRole, named name: String) throws -> [String: String] {
        let key = try app.pool.withConnection {
            try APIKeyAuthenticator.create(role: role, name: name, connection: $0).key
        }
        return ["Authorization": "Bearer \(key)"]
    }

    /// The sealed audit entries of `action`, oldest first, with their details as JSON.
    static func audited(_ action: String, in app: TestApplication) throws -> [(actor: String, details: [String: Any])] {
        try app.pool.withConnection { connection in
            try connection.query("SELECT actor, details FROM audit_log WHERE action = \(action) ORDER BY id").map {
                let details = try $0.decode("details", as: String.self)
                return (
                    try $0.decode("actor"),
                    (try JSONSerialization.jsonObject(with: Data(details.utf8)) as? [String: Any]) ?? [:]
                )
            }
        }
    }

    static func diff(_ details: [String: Any]) -> [[String: Any]] {
        guard let text = details["diff"] as? String else { return [] }
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]]) ?? []
    }

    @Test(
        "Reloads and failed reloads are audited with the person, both versions, the git commit and the diff; GET /v1/admin/audit lists them"
    )
    func reloadsAreAuditedWithPersonCommitAndDiff() throws {
        let (root, rules) = try Self.rulesInGit()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try TestApplication(rulesDirectory: rules.path)
        let admin = try Self.key(app, .admin, named: "Ada Admin")
        let original = app.application.context.rules.current.version

        try RulesTestData.rule("zz.audited", mode: "shadow", when: "wallet.device_score <= 0")
            .write(to: rules.appendingPathComponent("policy/zz_audited.rules"), atomically: true, encoding: .utf8)
        let replaced = try app.client.postJSON("/v1/admin/rules/reload", "{}", headers: admin)
        #expect(replaced.status == 200)
        let version = try #require((replaced.jsonObject()?["reload"] as? [String: Any])?["version"] as? String)
        #expect(version != original)

        // The watcher may have seen the file first: the entry that swapped it names who did.
        let reloaded = try #require(
            try Self.audited("rules.reloaded", in: app).first {
                $0.details["version"] as? String == version && $0.details["previousVersion"] as? String == original
            })
        #expect(reloaded.details["person"] as? String == (reloaded.actor == "watcher" ? "Grace Hopper" : "Ada Admin"))
        #expect(reloaded.details["gitCommit"] as? String == Self.commit)
        let diff = Self.diff(reloaded.details)
        #expect(diff.count == 1)
        #expect(diff.first?["ruleId"] as? String == "zz.audited")
        #expect(diff.first?["change"] as? String == "added")
        #expect((diff.first?["after"] as? String)?.contains("when wallet.device_score <= 0") == true)

        // A SIGHUP reload of a file whose examples fail: refused, audited as Grace Hopper's (the commit's author).
        try RulesTestData.example("audited rule passes green", given: "wallet.device_score: 0", expect: "orange")
            .write(to: rules.appendingPathComponent("examples/zz_audited.cases"), atomically: true, encoding: .utf8)
        app.application.reload()
        #expect(app.application.context.rules.current.version == version)
        let failed = try #require(try Self.audited("rules.reload_failed", in: app).last { $0.actor == "signal" })
        #expect(failed.details["person"] as? String == "Grace Hopper")
        #expect(failed.details["previousVersion"] as? String == version)
        #expect(failed.details["gitCommit"] as? String == Self.commit)
        #expect((failed.details["failedExamples"] as? String)?.hasPrefix("examples/zz_audited.cases:1:1") == true)

        // The API: analysts may read it; entries are newest first, with the diff as an array.
        let analyst = try Self.key(app, .analyst, named: "Alan Analyst")
        let listed = try app.client.get("/v1/admin/audit?kind=rules&since=2020-01-01T00:00:00Z", headers: analyst)
        #expect(listed.status == 200)
        let entries = try #require(listed.jsonObject()?["entries"] as? [[String: Any]])
        #expect(entries.first?["action"] as? String == "rules.reload_failed")
        let entry = try #require(
            entries.first {
                ($0["subject"] as? String) == "ruleset:\(version)" && ($0["action"] as? String) == "rules.reloaded"
            })
        let details = try #require(entry["details"] as? [String: Any])
        #expect((details["diff"] as? [[String: Any]])?.first?["ruleId"] as? String == "zz.audited")
        #expect(entries.allSatisfy { ($0["action"] as? String)?.hasPrefix("rules.") == true })
        for bad in ["kind=nope", "since=yesterday", "limit=0", "color=red", "before=x"] {
            #expect(try app.client.get("/v1/admin/audit?\(bad)", headers: analyst).status == 400, "\(bad)")
        }
        #expect(try app.client.get("/v1/admin/audit").status == 401)
        let ivr = try Self.key(app, .ivr, named: "ivr")
        #expect(try app.client.get("/v1/admin/audit", headers: ivr).status == 403)

        // The hash chain covers these entries like the others.
        let verification = try app.pool.withConnection { connection in
            _ = try AuditLog.seal(connection: connection, wait: true)
            return try AuditLog.verify(connection: connection)
        }
        #expect(verification.isIntact)
        #expect(verification.entries >= 2)
    }

    @Test(
        "With approval required: a proposal does not serve, self-approval is 403, another analyst's approval serves on two instances, rejection keeps the old version, each step audited"
    )
    func makerCheckerAcrossTwoInstances() throws {
        let (root, rules) = try Self.rulesInGit()
        defer { try? FileManager.default.removeItem(at: root) }
        let environment = ["ISSUERD_RULES_APPROVAL": "required"]
        let first = try TestApplication(environment: environment, rulesDirectory: rules.path)
        let second = try TestApplication(environment: environment, rulesDirectory: rules.path, sharing: first)
        let original = first.application.context.rules.current.version
        #expect(second.application.context.rules.current.version == original)
        let proposer = try Self.key(first, .admin, named: "Grace Hopper")
        let sameName = try Self.key(first, .analyst, named: "grace hopper")
        let checker = try Self.key(first, .analyst, named: "Alan Turing")

        // Propose: the reload records the change; nothing new serves anywhere.
        try RulesTestData.rule("zz.governed", mode: "shadow", when: "wallet.device_score <= 0")
            .write(to: rules.appendingPathComponent("policy/zz_governed.rules"), atomically: true, encoding: .utf8)
        let reload = try first.client.postJSON("/v1/admin/rules/reload", "{}", headers: proposer)
        #expect(reload.status == 200)
        let proposal = try #require(reload.jsonObject()?["reload"] as? [String: Any])
        #expect(proposal["result"] as? String == "proposed")
        #expect(proposal["previousVersion"] as? String == original)
        let proposedVersion = try #require(proposal["version"] as? String)
        // Another instance (or its watcher) may have proposed the same files first.
        let changes = try #require(
            try first.client.get("/v1/admin/rules/changes?status=proposed", headers: checker).jsonObject()?["changes"]
                as? [[String: Any]])
        let change = try #require(changes.first { $0["version"] as? String == proposedVersion })
        let changeID = try #require(change["changeId"] as? String)
        #expect(first.application.context.rules.current.version == original)
        #expect(second.application.context.rules.current.version == original)
        #expect(change["status"] as? String == "proposed")
        #expect(change["gitCommit"] as? String == Self.commit)
        #expect((change["tests"] as? [String: Any])?["failed"] as? Int == 0)
        #expect(((change["tests"] as? [String: Any])?["passed"] as? Int ?? 0) > 0)
        let diff = try #require(change["diff"] as? [[String: Any]])
        #expect(diff.map { $0["ruleId"] as? String } == ["zz.governed"])
        #expect(diff.first?["change"] as? String == "added")
        let detail = try #require(
            try second.client.get("/v1/admin/rules/changes/\(changeID)", headers: checker).jsonObject())
        #expect(detail["changeId"] as? String == changeID)
        #expect(detail.keys.contains("backtest"))

        // The proposer cannot approve it, under any key of the same name.
        let own = try first.client.postJSON(
            "/v1/admin/rules/changes/\(changeID)/approve", #"{"note":"mine"}"#, headers: sameName)
        #expect(own.status == 403)
        #expect(own.errorEnvelope()?["code"] as? String == "self_approval")
        #expect(first.application.context.rules.current.version == original)

        // Another analyst approves it on the second instance: both serve it.
        let approved = try second.client.postJSON(
            "/v1/admin/rules/changes/\(changeID)/approve", #"{"note":"shadow only, reviewed"}"#, headers: checker)
        #expect(approved.status == 200)
        #expect(approved.jsonObject()?["status"] as? String == "approved")
        #expect(approved.jsonObject()?["decidedBy"] as? String == "Alan Turing")
        #expect(second.application.context.rules.current.version == proposedVersion)
        let bothServe = RulesTestData.eventually {
            first.application.context.rules.current.version == proposedVersion
        }
        #expect(bothServe, "the first instance did not pick up the approval within 20 s")
        let again = try first.client.postJSON("/v1/admin/rules/changes/\(changeID)/approve", "{}", headers: checker)
        #expect(again.status == 409)
        #expect(again.errorEnvelope()?["code"] as? String == "change_not_proposed")

        // A second change, rejected: the approved version keeps serving on both.
        try RulesTestData.rule(
            "zz.governed", mode: "shadow", when: "wallet.device_score <= 0 and wallet.account_score <= 0"
        )
        .write(to: rules.appendingPathComponent("policy/zz_governed.rules"), atomically: true, encoding: .utf8)
        let secondReload = try first.client.postJSON("/v1/admin/rules/reload", "{}", headers: proposer)
        let rejectedVersion = try #require(
            (secondReload.jsonObject()?["reload"] as? [String: Any])?["version"] as? String)
        let pending = try #require(
            try first.client.get("/v1/admin/rules/changes?status=proposed", headers: checker).jsonObject()?["changes"]
                as? [[String: Any]])
        let rejectID = try #require(
            pending.first { $0["version"] as? String == rejectedVersion }?["changeId"] as? String)
        #expect(
            (pending.first { $0["changeId"] as? String == rejectID }?["diff"] as? [[String: Any]])?.first?["change"]
                as? String == "changed")
        let rejected = try first.client.postJSON(
            "/v1/admin/rules/changes/\(rejectID)/reject", #"{"note":"not now"}"#, headers: checker)
        #expect(rejected.status == 200)
        #expect(rejected.jsonObject()?["status"] as? String == "rejected")
        second.application.context.rules.follow()
        first.application.context.rules.follow()
        #expect(first.application.context.rules.current.version == proposedVersion)
        #expect(second.application.context.rules.current.version == proposedVersion)
        #expect(
            try first.client.postJSON("/v1/admin/rules/changes/\(rejectID)/reject", "{}", headers: checker).status
                == 409)
        #expect(
            try first.client.get("/v1/admin/rules/changes?status=maybe", headers: checker).status == 400)

        // Each step is in the audit log with the person, the diff and the commit.
        let proposed = try #require(
            try Self.audited("rules.proposed", in: first).first { $0.details["version"] as? String == proposedVersion })
        #expect(proposed.details["person"] as? String == "Grace Hopper")
        #expect(proposed.details["gitCommit"] as? String == Self.commit)
        #expect(proposed.details["previousVersion"] as? String == original)
        #expect(Self.diff(proposed.details).first?["ruleId"] as? String == "zz.governed")
        let approval = try #require(
            try Self.audited("rules.approved", in: first).first { $0.details["changeId"] as? String == changeID })
        #expect(approval.details["person"] as? String == "Alan Turing")
        #expect(approval.details["note"] as? String == "shadow only, reviewed")
        #expect(approval.details["gitCommit"] as? String == Self.commit)
        #expect(Self.diff(approval.details).first?["change"] as? String == "added")
        let rejection = try #require(
            try Self.audited("rules.rejected", in: first).first { $0.details["changeId"] as? String == rejectID })
        #expect(rejection.details["person"] as? String == "Alan Turing")
        #expect(Self.diff(rejection.details).first?["change"] as? String == "changed")
        let verification = try first.pool.withConnection { connection in
            _ = try AuditLog.seal(connection: connection, wait: true)
            return try AuditLog.verify(connection: connection)
        }
        #expect(verification.isIntact)
    }

    @Test(
        "issuerd rules propose / approve / reject: the proposer cannot approve; an approval serves on the running instance"
    )
    func commandLineProposeApproveReject() throws {
        let (root, rules) = try Self.rulesInGit()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try TestApplication(environment: ["ISSUERD_RULES_APPROVAL": "required"], rulesDirectory: rules.path)
        let original = app.application.context.rules.current.version
        let environment = ["ISSUERD_DATABASE_URL": app.database.connectionString]
        // A candidate directory elsewhere: the server's own directory stays as it is.
        let candidate = TestScratch.path("issuerd-rules-candidate")
        try FileManager.default.copyItem(
            at: TestApplication.repositoryRoot.appendingPathComponent("rules"), to: candidate)
        defer { try? FileManager.default.removeItem(at: candidate) }
        try RulesTestData.rule("zz.cli", mode: "shadow", when: "wallet.device_score <= 0")
            .write(to: candidate.appendingPathComponent("policy/zz_cli.rules"), atomically: true, encoding: .utf8)

        let proposed = try CommandLineRunner.run(
            ["rules", "propose", candidate.path, "--by", "Grace Hopper"], environment: environment)
        #expect(proposed.status == 0, "\(proposed.standardOutput)\(proposed.standardError)")
        #expect(proposed.standardOutput.contains("+ zz.cli (added)"))
        let line = try #require(
            proposed.standardOutput.split(separator: "\n").first { $0.hasPrefix("proposed change ") })
        let changeID = String(line.split(separator: " ")[2])
        app.application.context.rules.follow()
        #expect(app.application.context.rules.current.version == original)

        let own = try CommandLineRunner.run(
            ["rules", "approve", changeID, "--by", "grace hopper"], environment: environment)
        #expect(own.status == 1)
        #expect(own.standardOutput.contains("someone else must approve it"))
        let approved = try CommandLineRunner.run(
            ["rules", "approve", changeID, "--by", "Alan Turing", "--note", "ok"], environment: environment)
        #expect(approved.status == 0, "\(approved.standardOutput)\(approved.standardError)")
        let serving = RulesTestData.eventually { app.application.context.rules.current.version != original }
        #expect(serving, "the instance did not serve the approved change within 20 s")
        #expect(app.application.context.rules.current.rules.contains { $0.id == "zz.cli" })
        #expect(
            try CommandLineRunner.run(["rules", "reject", changeID, "--by", "Alan Turing"], environment: environment)
                .status == 1)

        // A backtest without --current compares with the approved change that serves, not with
        // the serving directory (which still holds the original version).
        let input = TestScratch.path("issuerd-backtest-input.jsonl")
        defer { try? FileManager.default.removeItem(at: input) }
        try Data(
            #"""
            {"type":"attempt","id":"a1","time":"2025-03-01T10:00:00Z","card_id":"c1","device_id":"d1","customer_id":"u1","attributes":{"card.status":"active","wallet.device_score":4}}

            """#.utf8
        ).write(to: input)
        let backtest = try CommandLineRunner.run(
            ["rules", "backtest", "--candidate", rules.path, "--input", input.path],
            environment: environment.merging(["ISSUERD_RULES_APPROVAL": "required", "ISSUERD_RULES_DIR": rules.path]) {
                $1
            })
        #expect(backtest.status == 0, "\(backtest.standardError)")
        let comparing = backtest.standardOutput.split(separator: "\n").first.map(String.init) ?? ""
        let approvedVersion = app.application.context.rules.current.version
        #expect(
            comparing
                == "comparing current \(approvedVersion) (approved change \(changeID), what issuerd serves: ISSUERD_RULES_APPROVAL=required) with candidate \(original) (\(rules.path))",
            "\(comparing)")

        // The failing-examples gate holds on the command line too.
        try RulesTestData.example("cli rule passes green", given: "wallet.device_score: 0", expect: "green")
            .write(to: candidate.appendingPathComponent("examples/zz_cli.cases"), atomically: true, encoding: .utf8)
        let refused = try CommandLineRunner.run(
            ["rules", "propose", candidate.path, "--by", "Grace Hopper"], environment: environment)
        #expect(refused.status == 1)
        #expect(refused.standardOutput.contains("rules.examples_failed"))
    }
}
