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
}
