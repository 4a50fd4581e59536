import Foundation
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("Outcomes: reported over HTTP and from CSV, kept with their history, audited, idempotent")
struct OutcomeTests {
    static let first = "0b5c4a1e-8f2d-4c3b-9a61-2f0e6d7c8b90"
    static let second = "1c6d5b2f-903e-4d4c-8b72-3f1f7e8d9ca1"
    static let unknown = "2d7e6c30-a14f-4e5d-9c83-4020809eadb2"

    /// Two attempts, the second of which created token `tok-2`.
    static func seed(_ app: TestApplication) throws {
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c1", card: "card-1", serial: 1)
        try app.pool.withConnection { connection in
            for (id, flow) in [(first, "yellow"), (second, "green")] {
                try connection.execute(
                    """
                    INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, inputs, features, hits,
                                                       flow, decision, ruleset_version, created_at)
                    VALUES (\(UUID(uuidString: id)!), 'in_app', 'card-1', 'c1', '{}', '{}', '[]', \(flow), 'X', 'v1',
                            now() - interval '2 days')
                    """)
            }
            try connection.execute(
                """
                INSERT INTO tokens (token_reference, card_id, status, attempt_id)
                VALUES ('tok-2', 'card-1', 'active', \(UUID(uuidString: second)!))
                """)
        }
    }

    private func post(_ app: TestApplication, _ key: String, _ items: String) throws -> TestHTTPResponse {
        try app.client.postJSON("/v1/admin/outcomes", #"{"outcomes": [\#(items)]}"#, headers: AdminFixtures.bearer(key))
    }

    private func auditCount(_ app: TestApplication) throws -> Int {
        try app.pool.withConnection { connection in
            try connection.query("SELECT count(*)::int AS n FROM audit_log WHERE action = 'outcome.recorded'").first!
                .decode("n")
        }
    }

    @Test("A batch records its good reports, lists each bad one by index, and records nothing new when re-posted")
    func batch() throws {
        let app = try TestApplication()
        try Self.seed(app)
        let analyst = try app.apiKey(role: .analyst)
        let items = """
            {"attemptId": "\(Self.first)", "outcome": "fraud", "source": "chargeback", "reportedAt": "2026-11-02T09:30:00Z",
             "amountLost": {"value": 350000, "currency": "KRW"}, "note": "reason 4837"},
            {"tokenReference": "tok-2", "outcome": "legitimate", "source": "cardholder"},
            {"attemptId": "\(Self.unknown)", "outcome": "fraud", "source": "analyst"},
            {"tokenReference": "tok-none", "outcome": "fraud", "source": "analyst"},
            {"attemptId": "\(Self.first)", "outcome": "maybe", "source": "analyst"},
            {"attemptId": "\(Self.first)", "outcome": "fraud", "source": "analyst", "amountLost": {"value": 5, "currency": "USD"}},
            {"attemptId": "\(Self.first)", "outcome": "fraud", "source": "analyst", "note": "card 4111 1111 1111 1111"}
            """
        let response = try post(app, analyst, items)
        #expect(response.status == 200, "\(response.text)")
        let body = try #require(response.jsonObject())
        #expect(body["recorded"] as? Int == 2)
        #expect(body["unchanged"] as? Int == 0)
        let errors = try #require(body["errors"] as? [[String: Any]])
        #expect(errors.map { $0["index"] as? Int } == [2, 3, 4, 5, 6])
        #expect(
            errors.map { $0["code"] as? String } == [
                "unknown_attempt", "unknown_token", "invalid_outcome", "invalid_outcome", "invalid_outcome",
            ])
        #expect((errors[0]["message"] as? String)?.contains(Self.unknown) == true)
        #expect((errors[1]["message"] as? String)?.contains("tok-none") == true)
        #expect(!response.text.contains("4111 1111"))
        #expect(try auditCount(app) == 2)

        // The same batch again: the good reports are kept already (the one without a time too).
        let again = try #require(try post(app, analyst, items).jsonObject())
        #expect(again["recorded"] as? Int == 0)
        #expect(again["unchanged"] as? Int == 2)
        #expect(try auditCount(app) == 2)

        // The token's report went to the attempt that created the token.
        let view = try #require(
            try app.client.get("/v1/admin/attempts/\(Self.second)", headers: AdminFixtures.bearer(analyst)).jsonObject()
        )
        let current = try #require(view["outcome"] as? [String: Any])
        #expect(current["outcome"] as? String == "legitimate")
        #expect(current["tokenReference"] as? String == "tok-2")
    }

    @Test("A later report becomes current and the earlier one stays in the history; each is audited")
    func history() throws {
        let app = try TestApplication()
        try Self.seed(app)
        let admin = try app.apiKey(role: .admin)
        _ = try post(
            app, admin,
            #"{"attemptId": "\#(Self.first)", "outcome": "legitimate", "source": "analyst", "reportedAt": "2026-10-01T00:00:00Z", "note": "looked fine"}"#
        )
        _ = try post(
            app, admin,
            #"{"attemptId": "\#(Self.first)", "outcome": "fraud", "source": "chargeback", "reportedAt": "2026-10-20T00:00:00Z", "amountLost": {"value": 120000, "currency": "KRW"}}"#
        )
        // An older report arriving late is kept, but does not displace the newer one.
        _ = try post(
            app, admin,
            #"{"attemptId": "\#(Self.first)", "outcome": "legitimate", "source": "cardholder", "reportedAt": "2026-09-01T00:00:00Z"}"#
        )
        let view = try #require(
            try app.client.get("/v1/admin/attempts/\(Self.first)", headers: AdminFixtures.bearer(admin)).jsonObject())
        let current = try #require(view["outcome"] as? [String: Any])
        #expect(current["outcome"] as? String == "fraud")
        #expect(current["source"] as? String == "chargeback")
        #expect((current["amountLost"] as? [String: Any])?["value"] as? Int == 120000)
        let history = try #require(view["outcomes"] as? [[String: Any]])
        #expect(history.map { $0["source"] as? String } == ["chargeback", "analyst", "cardholder"])
        #expect(try auditCount(app) == 3)
        let details = try app.pool.withConnection { connection in
            try connection.query(
                "SELECT details FROM audit_log WHERE action = 'outcome.recorded' ORDER BY id"
            ).map { try $0.decode("details", as: String.self) }
        }
        #expect(details[0].contains("looked fine"))
        #expect(details[1].contains("120000"))
        // Exactly one current report per attempt.
        let currents = try app.pool.withConnection { connection in
            try connection.query("SELECT count(*)::int AS n FROM attempt_outcomes WHERE is_current").first!.decode(
                "n", as: Int.self)
        }
        #expect(currents == 1)
    }

    @Test("Bad batches are 400; the IVR role is 403")
    func refusals() throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        let item = #"{"attemptId": "\#(Self.first)", "outcome": "fraud", "source": "analyst"}"#
        let tooMany = Array(repeating: item, count: 1001).joined(separator: ",")
        #expect(try post(app, admin, tooMany).status == 400)
        #expect(try post(app, admin, "").status == 400)
        #expect(
            try app.client.postJSON("/v1/admin/outcomes", #"{"outcome": []}"#, headers: AdminFixtures.bearer(admin))
                .status == 400)
        let ivr = try app.apiKey(role: .ivr)
        #expect(try post(app, ivr, item).status == 403)
        #expect(try app.client.postJSON("/v1/admin/outcomes", #"{"outcomes": [\#(item)]}"#).status == 401)
    }

    @Test(
        "A token deleted for fraud is a network signal, unconfirmed unless ISSUERD_OUTCOMES_NETWORK_CONFIRMS",
        arguments: [false, true])
    func networkSignal(confirms: Bool) throws {
        let app = try TestApplication(environment: ["ISSUERD_OUTCOMES_NETWORK_CONFIRMS": confirms ? "on" : "off"])
        try Self.seed(app)
        let event = #"{"tokenReference": "tok-2", "event": "deleted", "at": "2026-11-01T10:00:00Z", "reason": "fraud"}"#
        #expect(try app.postAsTSP("/v1/tsp/token-events", event).status == 204)
        let rows = try app.pool.withConnection { connection in
            try connection.query(
                "SELECT outcome, source, confirmed, is_current FROM attempt_outcomes WHERE attempt_id = \(UUID(uuidString: Self.second)!)"
            ).map {
                "\(try $0.decode("outcome", as: String.self)) \(try $0.decode("source", as: String.self)) \(try $0.decode("confirmed", as: Bool.self)) \(try $0.decode("is_current", as: Bool.self))"
            }
        }
        #expect(rows == ["fraud network \(confirms) true"])
        // A plain deletion records nothing.
        let plain = #"{"tokenReference": "tok-2", "event": "deleted", "at": "2026-11-01T11:00:00Z"}"#
        #expect(try app.postAsTSP("/v1/tsp/token-events", plain).status == 204)
        let count = try app.pool.withConnection { connection in
            try connection.query("SELECT count(*)::int AS n FROM attempt_outcomes").first!.decode("n", as: Int.self)
        }
        #expect(count == 1)
    }

    @Test("outcomes import: bad lines by number, exit 1, the good lines kept; the same file again records nothing")
    func importFile() throws {
        let app = try TestApplication()
        try Self.seed(app)
        let file = app.directory.appendingPathComponent("outcomes.csv")
        try """
        attempt_id,token_reference,outcome,source,reported_at,amount_lost,currency,note
        \(Self.first),,fraud,chargeback,2026-11-02T09:30:00Z,350000,KRW,"reason 4837, cardholder denies"
        ,tok-2,legitimate,cardholder,,,,
        \(Self.unknown),,fraud,analyst,,,,

        \(Self.first),,fraud,whoever,,,,
        \(Self.first),,fraud,analyst,2026-11-03T00:00:00Z,12,,
        \(Self.first),,"fraud,analyst

        """.write(to: file, atomically: true, encoding: .utf8)
        let environment = ["ISSUERD_DATABASE_URL": app.serviceConnectionString]
        let run = try CommandLineRunner.run(["outcomes", "import", file.path], environment: environment)
        #expect(run.status == 1, "\(run.standardOutput)\(run.standardError)")
        let lines = run.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.last == "outcomes import: recorded=2 unchanged=0 errors=4")
        #expect(
            lines.filter { $0.hasPrefix("line ") }.map { $0.prefix(7) } == ["line 4:", "line 6:", "line 7:", "line 8:"])
        #expect(lines.contains { $0.hasPrefix("line 4:") && $0.contains(Self.unknown) })
        #expect(lines.contains { $0.hasPrefix("line 6:") && $0.contains("source") })
        #expect(try auditCount(app) == 2)

        let again = try CommandLineRunner.run(["outcomes", "import", file.path], environment: environment)
        #expect(again.lastLine == "outcomes import: recorded=0 unchanged=2 errors=4")
        #expect(try auditCount(app) == 2)

        let help = try CommandLineRunner.run(["outcomes", "import", "--help"], environment: environment)
        #expect(help.status == 0)
        #expect(help.standardOutput.contains("outcomes import: recorded=N unchanged=N errors=N"))
        let header = app.directory.appendingPathComponent("bad-header.csv")
        try "attempt,outcome\n".write(to: header, atomically: true, encoding: .utf8)
        let refused = try CommandLineRunner.run(["outcomes", "import", header.path], environment: environment)
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("unknown column"))
    }
}
