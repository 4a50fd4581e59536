import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The rule language's bounds where analysts reach it over HTTP: a backtest candidate with a
/// condition far past its length is refused with its position, and the server keeps serving
/// (before the bounds, about 2,600 terms overflowed the compiler's stack and killed the server).
@Suite("Rule bounds through the API")
struct RulesBoundsRouteTests {
    @Test(
        "A backtest candidate with a condition of thousands of terms is 422 ruleset_invalid with its position; the server lives on"
    )
    func longCandidateIsRefused() throws {
        let app = try TestApplication()
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let conditions = [
            "wallet.device_score" + String(repeating: " + 1", count: 5_000) + " > 3",
            Array(repeating: "wallet.device_score <= 2", count: 2_000).joined(separator: " or "),
            Array(repeating: "wallet.device_score <= 2", count: 2_000).joined(separator: " and "),
        ]
        for condition in conditions {
            let rules = RulesTestData.rule("t.long", when: condition)
            let response = try app.client.postJSON(
                "/v1/admin/rules/backtest", try RulesHistoryTests.backtestBody(rules), headers: analyst)
            #expect(response.status == 422, "\(response.status) \(response.text.prefix(300))")
            let error = try #require(response.jsonObject()?["error"] as? [String: Any])
            #expect(error["code"] as? String == "ruleset_invalid")
            let diagnostics = try #require(error["diagnostics"] as? [[String: Any]])
            let first = try #require(diagnostics.first)
            #expect(first["file"] as? String == "candidate.rules")
            #expect((first["line"] as? Int ?? 0) > 0 && (first["column"] as? Int ?? 0) > 0)
            #expect((first["message"] as? String)?.contains("longer than") == true, "\(first)")
            #expect(try app.client.get("/healthz").status == 200)
        }
    }
}
