import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("Operations endpoints over HTTP")
struct OperationsTests {
    @Test("healthz, readyz with the active ruleset version, and metrics")
    func operations() throws {
        // Over the wire: the request metrics are the HTTP server's to write.
        let app = try TestApplication(transport: .live)
        let health = try app.client.get("/healthz")
        #expect(health.status == 200)
        #expect(health.jsonObject()?["status"] as? String == "ok")
        #expect(health.header("X-Request-Id") != nil)

        let ready = try app.client.get("/readyz")
        #expect(ready.status == 200)
        let body = try #require(ready.jsonObject())
        #expect((body["rulesetVersion"] as? String)?.hasPrefix("sha256:") == true)
        let checks = try #require(body["checks"] as? [[String: Any]])
        #expect(Set(checks.compactMap { $0["name"] as? String }) == ["database", "rules"])
        // The shape docs/openapi.yaml's ReadinessReport documents (schema fuzzing checks it too).
        #expect(body["ready"] as? Bool == true)
        #expect(body["status"] as? String == "ready")
        #expect(checks.allSatisfy { $0["ok"] as? Bool == true && $0["critical"] is Bool })

        let metrics = try app.client.get("/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.text.contains("issuerd_db_pool_connections{state=\"size\"} 6"))
        #expect(
            metrics.text.contains("issuerd_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} 1"))
    }

    @Test("A database outage answers 503 on /readyz, and the same instance recovers by itself")
    func outageAndRecovery() throws {
        let server = try DisposablePostgresServer()
        defer { server.destroy() }
        let app = try TestApplication(environment: ["ISSUERD_DATABASE_URL": server.connectionString])
        #expect(try app.client.get("/readyz").status == 200)
        try server.stop()
        let down = try app.client.get("/readyz")
        #expect(down.status == 503)
        #expect((down.jsonObject()?["status"] as? String) == "unavailable")
        try server.start()
        // The pool discards dead connections on checkout: the first request after the restart
        // already succeeds; a few tries absorb the server's own start-up.
        var status = 0
        for _ in 0..<50 where status != 200 {
            status = try app.client.get("/readyz").status
            if status != 200 { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(status == 200)
    }

    @Test("Every series is on /metrics from the first scrape, at 0; every metric the alert rules read is one of them")
    func seriesPresentAtZero() throws {
        let app = try TestApplication(transport: .live)
        let text = try app.client.get("/metrics").text
        let build = TestApplication.build
        #expect(text.contains(#"issuerd_build_info{version="\#(build.version)",commit="\#(build.commit)"} 1"#))
        #expect(text.contains("issuerd_db_pool_timeouts_total 0\n"))
        #expect(text.contains(#"issuerd_db_pool_wait_seconds_bucket{le="+Inf"} "#))
        #expect(text.contains("issuerd_db_pool_wait_seconds_count "))
        #expect(text.contains("issuerd_ready 1\n"))
        #expect(text.contains("issuerd_audit_unsealed_oldest_age_seconds "))
        for kind in ["notify", "tsp", "mdes_csapi"] {
            #expect(text.contains(#"issuerd_outbox_oldest_age_seconds{kind="\#(kind)"} 0"#))
            #expect(text.contains(#"issuerd_outbox_backlog{kind="\#(kind)",status="pending"} 0"#))
            #expect(text.contains(#"issuerd_outbox_backlog{kind="\#(kind)",status="dead"} 0"#))
            for result in ["delivered", "retry", "dead"] {
                #expect(text.contains(#"issuerd_outbox_deliveries_total{kind="\#(kind)",result="\#(result)"} 0"#))
            }
        }

        // deploy/prometheus/alerts.yml reads only metrics issuerd exports.
        let alerts = try String(
            contentsOf: TestApplication.repositoryRoot.appendingPathComponent("deploy/prometheus/alerts.yml"),
            encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: "issuerd_[a-z_]+")
        var names: Set<String> = []
        for match in pattern.matches(in: alerts, range: NSRange(alerts.startIndex..., in: alerts)) {
            var name = (alerts as NSString).substring(with: match.range)
            for suffix in ["_bucket", "_count", "_sum"] where name.hasSuffix(suffix) { name.removeLast(suffix.count) }
            names.insert(name)
        }
        #expect(names.count >= 7)
        #expect(names.filter { !text.contains("# TYPE \($0) ") }.sorted() == [])
    }

    @Test("A pool wait is observed per borrowed connection, and a borrower that gives up is counted")
    func poolWaitAndTimeouts() throws {
        // One connection, and no background work that borrows it meanwhile.
        let app = try TestApplication(
            environment: [
                "ISSUERD_DB_POOL_SIZE": "1", "ISSUERD_DB_ACQUIRE_TIMEOUT": "50ms", "ISSUERD_OUTBOX_DISPATCH": "false",
                "ISSUERD_AUDIT_SEAL": "false",
            ], transport: .live)
        #expect(try app.client.get("/readyz").status == 200)
        // Hold the only connection, so the next borrower gives up after 50 ms.
        try app.application.database.withConnection { _ in
            _ = try? app.application.database.withConnection { _ in }
        }
        let text = try app.client.get("/metrics").text
        #expect(text.contains("issuerd_db_pool_timeouts_total 1\n"), "\(text)")
        #expect(!text.contains("issuerd_db_pool_wait_seconds_count 0\n"))
    }
}
