import Foundation
import IssuerdRisk
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// `GET /v1/admin/rules` and `POST /v1/admin/rules/reload` over HTTP, against a real database.
@Suite("Admin rules API: status, hit counts, reload")
struct RulesAdminTests {
    @Test("GET /v1/admin/rules lists every rule with its hit counts from stored decisions; roles are enforced")
    func statusWithHitCounts() throws {
        let app = try TestApplication()
        let analyst = try app.apiKey(role: .analyst)
        let version = app.application.context.rules.current.version
        let now = Date()
        try RulesTestData.insertAttempt(
            at: now, card: nil, device: "d1", customer: nil,
            hits: #"[{"ruleId":"card.blocked","mode":"live"},{"ruleId":"device.blocked","mode":"live"}]"#,
            flow: "orange", version: version,
            pool: app.pool)
        try RulesTestData.insertAttempt(
            at: now, card: nil, device: "d1", customer: nil, hits: #"[{"ruleId":"card.blocked"}]"#,
            flow: "orange", version: version, pool: app.pool)
        // Another version's decision counts in the last 24 h, not since load.
        try RulesTestData.insertAttempt(
            at: now, card: nil, device: "d1", customer: nil, hits: #"[{"ruleId":"card.blocked"}]"#,
            flow: "orange", version: "sha256:older", pool: app.pool)
        // Older than a day: counted nowhere.
        try RulesTestData.insertAttempt(
            at: now.addingTimeInterval(-3 * 86_400), card: nil, device: "d1", customer: nil,
            hits: #"[{"ruleId":"card.blocked"}]"#, flow: "orange", version: version, pool: app.pool)

        let response = try app.client.get("/v1/admin/rules", headers: ["Authorization": "Bearer \(analyst)"])
        #expect(response.status == 200)
        let body = try #require(response.jsonObject())
        #expect(body["version"] as? String == version)
        #expect(body["hash"] as? String == version)
        #expect(body["loadedAt"] is String)
        #expect(body.keys.contains("lastFailedReload"))
        #expect(body["lastFailedReload"] is NSNull)
        let rules = try #require(body["rules"] as? [[String: Any]])
        #expect(rules.count == app.application.context.rules.current.rules.count)
        let blocked = try #require(rules.first { $0["id"] as? String == "card.blocked" })
        #expect(blocked["hits"] as? Int == 2)
        #expect(blocked["hitsLast24h"] as? Int == 3)
        #expect(blocked["outcome"] as? String == "orange")
        #expect(blocked["mode"] as? String == "live")
        #expect((blocked["location"] as? String)?.hasPrefix("policy/card.rules:") == true)
        let device = try #require(rules.first { $0["id"] as? String == "device.blocked" })
        #expect(device["hits"] as? Int == 1)
        let lists = try #require(body["lists"] as? [[String: Any]])
        #expect(lists.contains { $0["name"] as? String == "blocked_devices" && ($0["size"] as? Int ?? 0) > 0 })

        #expect(try app.client.get("/v1/admin/rules").status == 401)
        #expect(
            try app.client.get("/v1/admin/rules", headers: ["Authorization": "Bearer \(try app.apiKey(role: .ivr))"])
                .status == 403)
        #expect(
            try app.client.postJSON("/v1/admin/rules/reload", "{}", headers: ["Authorization": "Bearer \(analyst)"])
                .status == 403)
    }

    @Test(
        "A bad file: reload answers 422 with positions, the old version keeps serving, /readyz, metrics and GET show the failure"
    )
    func failedReloadKeepsTheLastGoodRuleset() throws {
        let rules = try RulesTestData.copyOfRules()
        defer { try? FileManager.default.removeItem(at: rules) }
        let app = try TestApplication(rulesDirectory: rules.path)
        let admin = try app.apiKey(role: .admin)
        let auth = ["Authorization": "Bearer \(admin)"]
        let original = app.application.context.rules.current.version

        let unchanged = try app.client.postJSON("/v1/admin/rules/reload", "{}", headers: auth)
        #expect(unchanged.status == 200)
        #expect((unchanged.jsonObject()?["reload"] as? [String: Any])?["result"] as? String == "unchanged")

        try
            "rule broken.rule\n  title \"x\"\n  outcome yellow\n  reason R\n  owner o\n  when wallet.device_scor <= 2\nend\n"
            .write(to: rules.appendingPathComponent("policy/zz_broken.rules"), atomically: true, encoding: .utf8)
        let refused = try app.client.postJSON("/v1/admin/rules/reload", "{}", headers: auth)
        #expect(refused.status == 422)
        let error = try #require(refused.errorEnvelope())
        #expect(error["code"] as? String == "ruleset_invalid")
        #expect((error["detail"] as? String)?.hasPrefix("policy/zz_broken.rules:6:8") == true)
        let diagnostic = try #require((error["diagnostics"] as? [[String: Any]])?.first)
        #expect(diagnostic["line"] as? Int == 6)
        #expect(diagnostic["column"] as? Int == 8)
        #expect(diagnostic["suggestion"] as? String == "wallet.device_score")
        #expect(app.application.context.rules.current.version == original)

        let status = try #require(try app.client.get("/v1/admin/rules", headers: auth).jsonObject())
        #expect(status["version"] as? String == original)
        let failure = try #require(status["lastFailedReload"] as? [String: Any])
        #expect((failure["error"] as? String)?.hasPrefix("policy/zz_broken.rules:6:8") == true)
        #expect(failure["at"] is String)

        let ready = try app.client.get("/readyz")
        #expect(ready.status == 200)
        let checks = try #require(ready.jsonObject()?["checks"] as? [[String: Any]])
        let rulesCheck = try #require(checks.first { $0["name"] as? String == "rules" })
        #expect(rulesCheck["ok"] as? Bool == false)
        // Public: that the reload failed, never the rule files' diagnostics (those are in GET above).
        let detail = try #require(rulesCheck["detail"] as? String)
        #expect(detail.hasPrefix("last reload failed at "))
        #expect(!detail.contains("zz_broken") && !detail.contains("device_scor"))
        let metrics = try app.client.get("/metrics").text
        #expect(metrics.contains("issuerd_rules_last_reload_failed 1"))
        #expect(metrics.contains(#"issuerd_rules_reload_total{result="failed"}"#))
        #expect(metrics.contains(#"issuerd_ruleset_info{version="\#(original)"} 1"#))

        // Fixing the file reloads a new version, clears the failure, and is audited with the key as actor.
        try RulesTestData.rule("zz.fixed", mode: "shadow", when: "wallet.device_score <= 0")
            .write(to: rules.appendingPathComponent("policy/zz_broken.rules"), atomically: true, encoding: .utf8)
        let replaced = try app.client.postJSON("/v1/admin/rules/reload", "{}", headers: auth)
        #expect(replaced.status == 200)
        let body = try #require(replaced.jsonObject())
        let reload = try #require(body["reload"] as? [String: Any])
        #expect(reload["result"] as? String == "replaced")
        #expect(reload["previousVersion"] as? String == original)
        #expect(body["version"] as? String != original)
        #expect(body["lastFailedReload"] is NSNull)
        #expect(try app.client.get("/metrics").text.contains("issuerd_rules_last_reload_failed 0"))
        let audited = try app.pool.withConnection { connection in
            try connection.query(
                "SELECT actor, details FROM audit_log WHERE action = 'rules.reloaded' AND subject = \("ruleset:" + (body["version"] as? String ?? ""))"
            ).map { (try $0.decode("actor", as: String.self), try $0.decode("details", as: String.self)) }
        }
        #expect(audited.count == 1)
        #expect(audited.first?.0.hasPrefix("apikey:") == true)
        #expect(audited.first?.1.contains(#""trigger":"api""#) == true)
    }

    @Test("A version whose examples fail is refused at reload (API and watcher); the old version keeps serving")
    func failingExamplesAreRefusedAtReload() throws {
        let rules = try RulesTestData.copyOfRules()
        defer { try? FileManager.default.removeItem(at: rules) }
        let app = try TestApplication(rulesDirectory: rules.path)
        let auth = ["Authorization": "Bearer \(try app.apiKey(role: .admin))"]
        let original = app.application.context.rules.current.version
        // Compiles, but its example expects green where the rule steps up.
        try RulesTestData.rule("zz.half_done", when: "wallet.device_score <= 0")
            .write(to: rules.appendingPathComponent("policy/zz_half_done.rules"), atomically: true, encoding: .utf8)
        try RulesTestData.example("half-done rule declines", given: "wallet.device_score: 0", expect: "green")
            .write(to: rules.appendingPathComponent("examples/zz_half_done.cases"), atomically: true, encoding: .utf8)
        #expect(throws: Never.self) {
            try RulesetLoader(path: rules.path, contentHasher: RulesetVersioning.sha256).load()
        }

        // The watcher sees the files first or the call below does: either way nothing new serves.
        let refused = try app.client.postJSON("/v1/admin/rules/reload", "{}", headers: auth)
        #expect(refused.status == 422)
        let error = try #require(refused.errorEnvelope())
        #expect(error["code"] as? String == "ruleset_invalid")
        let detail = try #require(error["detail"] as? String)
        #expect(detail.hasPrefix(#"examples/zz_half_done.cases:1:1: error: example "half-done rule declines" fails"#))
        #expect(detail.contains("expected green, got"))
        #expect(app.application.context.rules.current.version == original)
        let status = try #require(try app.client.get("/v1/admin/rules", headers: auth).jsonObject())
        #expect(status["version"] as? String == original)
        let failure = try #require(status["lastFailedReload"] as? [String: Any])
        #expect((failure["error"] as? String)?.contains("half-done rule declines") == true)
        // The watcher refuses it too, and keeps the old version.
        try RulesTestData.example("half-done rule declines", given: "wallet.device_score: 0", expect: "green")
            .appending("\n").write(
                to: rules.appendingPathComponent("examples/zz_half_done.cases"), atomically: true, encoding: .utf8)
        let watched = RulesTestData.eventually {
            app.application.context.rules.active.status.lastReload?.by.hasSuffix("via watcher") == true
        }
        #expect(watched, "the watcher did not try the new files within 20 s")
        #expect(app.application.context.rules.active.status.lastFailure != nil)
        #expect(app.application.context.rules.current.version == original)
    }

    @Test("The file watcher reloads a changed rules directory by itself")
    func watcherPicksUpAChange() throws {
        let rules = try RulesTestData.copyOfRules()
        defer { try? FileManager.default.removeItem(at: rules) }
        let app = try TestApplication(rulesDirectory: rules.path)
        let original = app.application.context.rules.current.version
        try RulesTestData.rule("zz.watched", mode: "shadow", when: "wallet.device_score <= 0")
            .write(to: rules.appendingPathComponent("policy/zz_watched.rules"), atomically: true, encoding: .utf8)
        let expected = try RulesetLoader(path: rules.path, contentHasher: RulesetVersioning.sha256).load().version
        #expect(expected != original)
        let swapped = RulesTestData.eventually { app.application.context.rules.current.version == expected }
        #expect(swapped, "the watcher did not reload within 20 s")
        #expect(app.application.context.rules.current.rules.contains { $0.id == "zz.watched" })
        let audited = RulesTestData.eventually(within: 5) {
            let count = try? app.pool.withConnection { connection in
                try connection.query(
                    "SELECT count(*)::bigint AS n FROM audit_log WHERE action = 'rules.reloaded' AND actor = 'watcher'"
                )
                .first?.decode("n", as: Int64.self)
            }
            return count == 1
        }
        #expect(audited)
    }
}
