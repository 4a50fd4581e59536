import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// `issuerd demo` against a real server, as a newcomer runs it: again and again.
@Suite("issuerd demo: green, yellow and orange on every run")
struct DemoTests {
    @Test("Three runs in a row each give green, yellow and orange (each run uses devices of its own)")
    func threeRuns() throws {
        let app = try TestApplication(transport: .live)
        let environment = [
            "ISSUERD_ADMIN_KEY": try app.apiKey(role: .admin), "ISSUERD_APP_JWT_SECRET": app.appJWTSecret,
            "ISSUERD_TSP_HMAC_SECRET": app.tspSecret,
        ]
        for run in 1...3 {
            let result = try CommandLineRunner.run(
                [
                    "demo", "--url", "http://127.0.0.1:\(app.application.port)", "--pki",
                    app.directory.appendingPathComponent("pki").path,
                ], environment: environment)
            #expect(result.status == 0, "run \(run): \(result.standardOutput) \(result.standardError)")
            #expect(result.standardOutput.contains("all three cases came out as expected"), "run \(run)")
            #expect(!result.standardOutput.contains("!!"), "run \(run): \(result.standardOutput)")
        }
    }

    @Test(
        "--history writes days of decisions as the serving version, and a first backtest of a tighter rule changes flows"
    )
    func history() throws {
        let app = try TestApplication(transport: .live)
        let admin = try app.apiKey(role: .admin)
        let result = try CommandLineRunner.run(
            [
                "demo", "--url", "http://127.0.0.1:\(app.application.port)", "--pki",
                app.directory.appendingPathComponent("pki").path, "--history", "3", "--per-day", "400",
            ],
            environment: [
                "ISSUERD_ADMIN_KEY": admin, "ISSUERD_APP_JWT_SECRET": app.appJWTSecret,
                "ISSUERD_TSP_HMAC_SECRET": app.tspSecret, "ISSUERD_DATABASE_URL": app.database.connectionString,
            ])
        #expect(result.status == 0, "\(result.standardOutput) \(result.standardError)")
        #expect(result.standardOutput.contains("wrote 1200 attempts"), "\(result.standardOutput)")
        let version = app.application.context.rules.current.version
        let (count, versions, days) = try app.pool.withConnection { connection in
            let row = try connection.query(
                """
                SELECT count(*) AS n, count(DISTINCT ruleset_version) AS versions,
                       extract(epoch FROM max(created_at) - min(created_at)) / 86400 AS days
                FROM provisioning_attempts WHERE request_id LIKE 'demo-%-req-%' AND ruleset_version = \(version)
                """
            ).first!
            return (
                try row.decode("n", as: Int64.self), try row.decode("versions", as: Int64.self),
                try row.decode("days", as: Double.self)
            )
        }
        #expect(count == 1200 && versions == 1)
        #expect(days > 2.9 && days <= 3)
        // The analyst's first backtest over the last day: a tighter velocity rule changes flows.
        let formatter = ISO8601DateFormatter()
        let rule =
            "rule demo.tighter\\n  title \\\"tighter\\\"\\n  outcome yellow\\n  reason DEMO\\n  owner demo\\n  when attempts(card, 72h) >= 1\\nend\\n"
        let body =
            #"{"rules":{"policy/zz_demo.rules":"\#(rule)"},"since":"\#(formatter.string(from: Date().addingTimeInterval(-86_400)))","until":"\#(formatter.string(from: Date()))"}"#
        let response = try app.client.postJSON(
            "/v1/admin/rules/backtest", body, headers: ["Authorization": "Bearer \(admin)"])
        #expect(response.status == 200, "\(response.text)")
        #expect((response.jsonObject()?["changed"] as? Int ?? 0) > 0, "\(response.text.prefix(500))")
    }
}
