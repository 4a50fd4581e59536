import Foundation
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("Review queue: what enters, queues per owner and mine, one analyst per case across instances")
struct ReviewQueueTests {
    static let orange = "3e8f7d41-b250-4f6e-8d94-5131919fbec3"
    static let yellowLate = "4f908e52-c361-4a7f-9ea5-624202a0cfd4"
    static let yellowDone = "50a19f63-d472-4b80-8fb6-735313b1d0e5"
    static let yellowYoung = "61b2a074-e583-4c91-90c7-846424c2e1f6"
    static let green = "72c3b185-f694-4da2-81d8-957535d3f207"

    /// One attempt of each kind on card-1; the rule ids are the repository's (their owners are
    /// the rule files').
    static func seed(_ app: TestApplication) throws -> (orangeRule: String, orangeOwner: String) {
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c1", card: "card-1", serial: 1)
        let rules = app.application.context.rules.current.rules
        let orangeRule = try #require(rules.first { $0.outcome.description == "orange" && $0.mode.rawValue == "live" })
        let yellowRule = try #require(rules.first { $0.outcome.description == "yellow" && $0.mode.rawValue == "live" })
        try app.pool.withConnection { connection in
            for (id, flow, rule, age) in [
                (orange, "orange", orangeRule.id, 3600.0), (yellowLate, "yellow", yellowRule.id, 2 * 86_400.0),
                (yellowDone, "yellow", yellowRule.id, 2 * 86_400.0), (yellowYoung, "yellow", yellowRule.id, 600.0),
                (green, "green", "", 3600.0),
            ] {
                let hits =
                    rule.isEmpty ? "[]" : #"[{"rule":"\#(rule)","outcome":"\#(flow)","mode":"live","values":[]}]"#
                try connection.execute(
                    """
                    INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, inputs, features, hits,
                                                       flow, decision, ruleset_version, created_at)
                    VALUES (\(UUID(uuidString: id)!), 'in_app', 'card-1', 'c1', '{}', '{}', \(hits)::jsonb, \(flow), 'X',
                            'v1', now() - make_interval(secs => \(age)))
                    """)
            }
            try connection.execute(
                """
                INSERT INTO tokens (token_reference, card_id, status, attempt_id) VALUES
                    ('tok-late', 'card-1', 'pending_verification', \(UUID(uuidString: yellowLate)!)),
                    ('tok-done', 'card-1', 'active', \(UUID(uuidString: yellowDone)!))
                """)
        }
        return (orangeRule.id, orangeRule.owner)
    }

    private func cases(_ app: TestApplication, _ key: String, _ query: String = "") throws -> [String: Any] {
        let response = try app.client.get("/v1/admin/cases\(query)", headers: AdminFixtures.bearer(key))
        #expect(response.status == 200, "\(response.text)")
        return response.jsonObject() ?? [:]
    }

    private func caseID(_ app: TestApplication, _ key: String, attempt: String) throws -> String {
        let list = try #require(try cases(app, key)["cases"] as? [[String: Any]])
        return try #require(list.first { $0["attemptId"] as? String == attempt }?["caseId"] as? String)
    }

    @Test("Orange and late yellow enter, once; a completed or young yellow and a green do not; queues by owner")
    func entering() throws {
        let app = try TestApplication()
        let (_, owner) = try Self.seed(app)
        let analyst = try app.apiKey(role: .analyst)
        let first = try cases(app, analyst)
        let listed = try #require(first["cases"] as? [[String: Any]])
        #expect(Set(listed.compactMap { $0["attemptId"] as? String }) == [Self.orange, Self.yellowLate])
        let orangeCase = try #require(listed.first { $0["attemptId"] as? String == Self.orange })
        #expect(orangeCase["reason"] as? String == "orange")
        #expect(orangeCase["owners"] as? [String] == [owner])
        #expect(orangeCase["lastFour"] as? String != nil)
        #expect((orangeCase["age"] as? String)?.hasPrefix("1h") == true)
        #expect(
            listed.first { $0["attemptId"] as? String == Self.yellowLate }?["reason"] as? String
                == "step_up_not_completed")
        // Reading again opens nothing twice.
        #expect((try cases(app, analyst)["cases"] as? [[String: Any]])?.count == 2)
        let byOwner = try #require(try cases(app, analyst, "?queue=owner:\(owner)")["cases"] as? [[String: Any]])
        #expect(byOwner.contains { $0["attemptId"] as? String == Self.orange })
        #expect((try cases(app, analyst, "?queue=owner:nobody")["cases"] as? [[String: Any]])?.isEmpty == true)
        #expect((try cases(app, analyst, "?queue=mine")["cases"] as? [[String: Any]])?.isEmpty == true)
        #expect(
            try app.client.get("/v1/admin/cases?queue=theirs", headers: AdminFixtures.bearer(analyst)).status == 400)
        #expect(
            try app.client.get("/v1/admin/cases?status=pending", headers: AdminFixtures.bearer(analyst)).status == 400)
    }

    @Test("Two analysts on two instances take one case at once: one holds it, the other gets 409")
    func takingOnTwoInstances() throws {
        let app = try TestApplication()
        let second = try TestApplication(sharing: app)
        _ = try Self.seed(app)
        let alice = try app.apiKey(role: .analyst)
        let bob = try app.apiKey(role: .analyst)
        let id = try caseID(app, alice, attempt: Self.orange)
        for _ in 0..<5 {
            try app.pool.withConnection { connection in
                try connection.execute(
                    "UPDATE review_cases SET assignee = NULL, assigned_at = NULL WHERE case_id = \(Int64(id)!)")
            }
            let start = DispatchSemaphore(value: 0)
            let first = BackgroundCall {
                start.wait()
                return try app.client.postJSON(
                    "/v1/admin/cases/\(id)/assign", "{}", headers: AdminFixtures.bearer(alice))
            }
            let other = BackgroundCall {
                start.wait()
                return try second.client.postJSON(
                    "/v1/admin/cases/\(id)/assign", "{}", headers: AdminFixtures.bearer(bob))
            }
            start.signal()
            start.signal()
            let statuses = [
                try #require(first.result(within: 60)).get().status,
                try #require(other.result(within: 60)).get().status,
            ].sorted()
            #expect(statuses == [200, 409])
        }
        // The holder's "mine" lists it; the other's close is 409; the holder closes it with an outcome.
        let holder = try app.pool.withConnection { connection in
            try connection.query("SELECT assignee FROM review_cases WHERE case_id = \(Int64(id)!)").first!.decode(
                "assignee", as: String.self)
        }
        let (mine, theirs) = holder.hasSuffix(try keyID(app, alice)) ? (alice, bob) : (bob, alice)
        #expect((try cases(app, mine, "?queue=mine")["cases"] as? [[String: Any]])?.count == 1)
        let refused = try app.client.postJSON(
            "/v1/admin/cases/\(id)/close", #"{"outcome":"fraud","note":"not mine"}"#,
            headers: AdminFixtures.bearer(theirs))
        #expect(refused.status == 409)
        #expect(refused.text.contains("case_held"))
        let closed = try second.client.postJSON(
            "/v1/admin/cases/\(id)/close", #"{"outcome":"fraud","note":"cardholder denies"}"#,
            headers: AdminFixtures.bearer(mine))
        #expect(closed.status == 200, "\(closed.text)")
        #expect(closed.jsonObject()?["status"] as? String == "closed")
        let again = try app.client.postJSON(
            "/v1/admin/cases/\(id)/close", #"{"outcome":"legitimate"}"#, headers: AdminFixtures.bearer(mine))
        #expect(again.status == 409)
        #expect(again.text.contains("case_closed"))
        // The outcome was recorded on the attempt, with the note.
        let view = try #require(
            try app.client.get("/v1/admin/attempts/\(Self.orange)", headers: AdminFixtures.bearer(mine)).jsonObject())
        let outcome = try #require(view["outcome"] as? [String: Any])
        #expect(outcome["outcome"] as? String == "fraud")
        #expect(outcome["source"] as? String == "analyst")
        #expect(outcome["note"] as? String == "cardholder denies")
        #expect(
            (try cases(app, mine, "?status=closed")["cases"] as? [[String: Any]])?.first?["outcome"] as? String
                == "fraud")
    }

    @Test("The case view shows the attempt, the card's other attempts and tokens; suspending goes through card status")
    func caseViewAndSuspend() throws {
        let app = try TestApplication()
        _ = try Self.seed(app)
        let analyst = try app.apiKey(role: .analyst)
        let id = try caseID(app, analyst, attempt: Self.orange)
        let view = try #require(
            try app.client.get("/v1/admin/cases/\(id)", headers: AdminFixtures.bearer(analyst)).jsonObject())
        #expect((view["attempt"] as? [String: Any])?["attemptId"] as? String == Self.orange)
        #expect(((view["attempt"] as? [String: Any])?["hits"] as? [[String: Any]])?.first?["values"] != nil)
        let others = try #require(view["cardAttempts"] as? [[String: Any]])
        #expect(others.count == 4)
        #expect((view["customerAttempts"] as? [[String: Any]])?.count == 4)
        #expect((view["tokens"] as? [[String: Any]])?.count == 2)
        #expect(try app.client.get("/v1/admin/cases/999999", headers: AdminFixtures.bearer(analyst)).status == 404)

        let suspended = try app.client.postJSON(
            "/v1/admin/cases/\(id)/suspend-tokens", "{}", headers: AdminFixtures.bearer(analyst))
        #expect(suspended.status == 200, "\(suspended.text)")
        #expect(suspended.jsonObject()?["tokensAffected"] as? Int == 2)
        #expect(
            try AdminFixtures.tokenStatuses(app, card: "card-1") == ["tok-late": "suspended", "tok-done": "suspended"])
        let queued = try app.pool.withConnection { connection in
            try connection.query("SELECT count(*)::int AS n FROM outbox WHERE kind = 'tsp'").first!.decode(
                "n", as: Int.self)
        }
        #expect(queued == 2)
    }

    private func keyID(_ app: TestApplication, _ key: String) throws -> String {
        try #require(try app.application.context.apiKeys.principal(key: key)).keyID
    }
}
