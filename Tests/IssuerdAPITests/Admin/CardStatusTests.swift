import Foundation
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("Card status changes: tokens, outbox and audit in one transaction")
struct CardStatusTests {
    /// Outbox rows of kind `tsp`, as (dedup key, decoded payload).
    private func outbox(_ app: TestApplication) throws -> [(key: String, payload: TSPNotification)] {
        try app.pool.withConnection { connection in
            try connection.query("SELECT dedup_key, payload FROM outbox WHERE kind = 'tsp' ORDER BY id").map {
                (
                    try $0.decode("dedup_key", as: String.self),
                    try $0.decode("payload", as: PostgresJSON.self).decode(TSPNotification.self)
                )
            }
        }
    }

    private func setStatus(
        _ app: TestApplication, _ key: String, card: String, _ body: String
    ) throws -> TestHTTPResponse {
        try app.client.postJSON("/v1/admin/cards/\(card)/status", body, headers: AdminFixtures.bearer(key))
    }

    @Test(
        "Lost suspends active and pending tokens with events and outbox rows; active again resumes exactly those, to their old state"
    )
    func lostThenFound() throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c1", card: "card-1", serial: 1)
        try AdminFixtures.insertToken(app, reference: "tok-active", card: "card-1", status: "active")
        try AdminFixtures.insertToken(app, reference: "tok-pending", card: "card-1", status: "pending_verification")
        try AdminFixtures.insertToken(app, reference: "tok-user-suspended", card: "card-1", status: "suspended")
        try AdminFixtures.insertToken(app, reference: "tok-deleted", card: "card-1", status: "deleted")

        let lost = try setStatus(app, admin, card: "card-1", #"{"status":"lost","reason":"called the hotline"}"#)
        #expect(lost.status == 200)
        let body = try #require(lost.jsonObject())
        #expect(body["status"] as? String == "lost")
        #expect(body["tokensAffected"] as? Int == 2)
        #expect(body["cardId"] as? String == "card-1")
        #expect(
            try AdminFixtures.tokenStatuses(app, card: "card-1") == [
                "tok-active": "suspended", "tok-pending": "suspended", "tok-user-suspended": "suspended",
                "tok-deleted": "deleted",
            ])
        let queued = try outbox(app)
        #expect(queued.map(\.payload.tokenReference) == ["tok-active", "tok-pending"])
        #expect(
            queued.allSatisfy {
                $0.payload.action == "suspend" && $0.payload.reason == "card_lost" && $0.payload.cardId == "card-1"
            })
        #expect(queued.allSatisfy { $0.key.hasPrefix("tsp:\($0.payload.tokenReference):suspend:") })

        // Lost → stolen touches nothing more; the same status again is a no-op.
        #expect(
            try setStatus(app, admin, card: "card-1", #"{"status":"stolen"}"#).jsonObject()?["tokensAffected"] as? Int
                == 0)
        #expect(
            try setStatus(app, admin, card: "card-1", #"{"status":"stolen"}"#).jsonObject()?["tokensAffected"] as? Int
                == 0)

        let found = try setStatus(app, admin, card: "card-1", #"{"status":"active","reason":"found"}"#)
        #expect(found.jsonObject()?["tokensAffected"] as? Int == 2)
        #expect(
            try AdminFixtures.tokenStatuses(app, card: "card-1") == [
                "tok-active": "active", "tok-pending": "pending_verification", "tok-user-suspended": "suspended",
                "tok-deleted": "deleted",
            ])
        let resumed = try outbox(app).filter { $0.payload.action == "resume" }
        #expect(Set(resumed.map(\.payload.tokenReference)) == ["tok-active", "tok-pending"])

        let events = try app.pool.withConnection { connection in
            try connection.query(
                "SELECT token_reference || ':' || event AS e FROM token_events WHERE source = 'issuer' ORDER BY id"
            )
            .map { try $0.decode("e", as: String.self) }
        }
        #expect(
            events == ["tok-active:suspended", "tok-pending:suspended", "tok-active:resumed", "tok-pending:resumed"])
        let audit = try app.pool.withConnection { connection in
            try connection.query("SELECT details FROM audit_log WHERE action = 'card.status_changed' ORDER BY id")
                .map { try $0.decode("details", as: String.self) }
        }
        #expect(audit.count == 3)
        #expect(audit.first?.contains(#""reason":"called the hotline""#) == true)
        #expect(try AuditChainCheck.verify(database: app.pool).isIntact)
    }

    @Test("Closed deletes every remaining token, and a closed card cannot change again (409 invalid_state)")
    func closed() throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c1", card: "card-2", serial: 2)
        try AdminFixtures.insertToken(app, reference: "t1", card: "card-2", status: "active")
        try AdminFixtures.insertToken(app, reference: "t2", card: "card-2", status: "suspended")
        let closed = try setStatus(app, admin, card: "card-2", #"{"status":"closed"}"#)
        #expect(closed.jsonObject()?["tokensAffected"] as? Int == 2)
        #expect(try AdminFixtures.tokenStatuses(app, card: "card-2") == ["t1": "deleted", "t2": "deleted"])
        #expect(try outbox(app).map(\.payload.action) == ["delete", "delete"])
        let again = try setStatus(app, admin, card: "card-2", #"{"status":"active"}"#)
        #expect(again.status == 409)
        #expect(again.errorEnvelope()?["code"] as? String == "invalid_state")
    }

    @Test("Blocked leaves tokens alone; bad bodies and unknown cards are 4xx and change nothing")
    func blockedAndRefusals() throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c1", card: "card-3", serial: 3)
        try AdminFixtures.insertToken(app, reference: "t1", card: "card-3", status: "active")
        #expect(
            try setStatus(app, admin, card: "card-3", #"{"status":"blocked"}"#).jsonObject()?["tokensAffected"] as? Int
                == 0)
        #expect(try AdminFixtures.tokenStatuses(app, card: "card-3") == ["t1": "active"])
        #expect(try setStatus(app, admin, card: "card-3", #"{"status":"misplaced"}"#).status == 400)
        #expect(
            try setStatus(
                app, admin, card: "card-3", #"{"status":"lost","reason":"\#(String(repeating: "r", count: 257))"}"#
            ).status == 400)
        #expect(try setStatus(app, admin, card: "card-3", #"{"reason":"x"}"#).status == 400)
        let missing = try setStatus(app, admin, card: "no-such-card", #"{"status":"lost"}"#)
        #expect(missing.status == 404)
        #expect(missing.errorEnvelope()?["code"] as? String == "card_not_found")
        #expect(try outbox(app).isEmpty)
    }

    @Test("A failure after the token updates rolls back the status, the tokens and the outbox together")
    func atomic() throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c1", card: "card-4", serial: 4)
        try AdminFixtures.insertToken(app, reference: "t1", card: "card-4", status: "active")
        // A dedup key already taken makes the outbox insert fail inside the transaction.
        try app.pool.withConnection { connection in
            let nextChange = try connection.query("SELECT last_value + 1 AS n FROM card_status_history_id_seq").first!
                .decode("n", as: Int64.self)
            _ = try connection.execute(
                "INSERT INTO outbox (kind, dedup_key, payload) VALUES ('tsp', \("tsp:t1:suspend:\(nextChange)"), '{}')")
        }
        let response = try setStatus(app, admin, card: "card-4", #"{"status":"lost"}"#)
        #expect(response.status == 500)
        let status = try app.pool.withConnection { try CardStore.find("card-4", connection: $0)?.status }
        #expect(status == .active)
        #expect(try AdminFixtures.tokenStatuses(app, card: "card-4") == ["t1": "active"])
        let events = try app.pool.withConnection {
            try $0.query("SELECT count(*) AS n FROM token_events").first!.decode("n", as: Int64.self)
        }
        #expect(events == 0)
    }

    @Test("A card's tokens: each one's status, service and where a card suspension took it from; 404, 401, 403")
    func cardTokens() throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        let analyst = try app.apiKey(role: .analyst)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c1", card: "card-1", serial: 1)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c2", card: "card-2", serial: 2)
        let none = try app.client.get("/v1/admin/cards/card-1/tokens", headers: AdminFixtures.bearer(analyst))
        #expect((none.jsonObject()?["tokens"] as? [Any])?.isEmpty == true, "\(none.text)")
        try AdminFixtures.insertToken(app, reference: "tok-active", card: "card-1", status: "active")
        try AdminFixtures.insertToken(app, reference: "tok-pending", card: "card-1", status: "pending_verification")
        try AdminFixtures.insertToken(app, reference: "tok-other", card: "card-2", status: "active")
        try app.pool.withConnection { connection in
            try connection.execute(
                "UPDATE tokens SET service = 'mdes', device_id = 'dev-9', created_at = now() + interval '1 second' WHERE token_reference = 'tok-pending'"
            )
        }
        #expect(try setStatus(app, admin, card: "card-1", #"{"status":"lost"}"#).status == 200)

        let listed = try app.client.get("/v1/admin/cards/card-1/tokens", headers: AdminFixtures.bearer(analyst))
        #expect(listed.status == 200, "\(listed.text)")
        let body = try #require(listed.jsonObject())
        #expect(body["cardId"] as? String == "card-1")
        let tokens = try #require(body["tokens"] as? [[String: Any]])
        #expect(tokens.map { $0["tokenReference"] as? String } == ["tok-pending", "tok-active"], "newest first")
        #expect(tokens.map { $0["status"] as? String } == ["suspended", "suspended"])
        #expect(tokens.map { $0["suspendedByIssuerFrom"] as? String } == ["pending_verification", "active"])
        #expect(tokens.map { $0["service"] as? String } == ["mdes", "tsp"])
        #expect(tokens.first?["deviceId"] as? String == "dev-9")
        #expect(!listed.text.contains("tok-other"))

        #expect(
            try app.client.get("/v1/admin/cards/no-such-card/tokens", headers: AdminFixtures.bearer(admin)).status
                == 404)
        #expect(try app.client.get("/v1/admin/cards/card-1/tokens").status == 401)
        let ivr = try app.apiKey(role: .ivr)
        #expect(try app.client.get("/v1/admin/cards/card-1/tokens", headers: AdminFixtures.bearer(ivr)).status == 403)
    }
}
