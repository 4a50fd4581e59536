import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// `POST /v1/tsp/tokenization/authorize` and `POST /v1/tsp/token-events` over HTTP.
@Suite("TSP tokenization over HTTP")
struct TokenizationTests {
    @Test("A bad signature, an old timestamp and a replayed signature are 401")
    func signatureRefused() throws {
        let app = try TestApplication()
        let body = DecisionFixtures.authorizeBody()
        let bad = try app.client.postJSON(
            "/v1/tsp/tokenization/authorize", body,
            headers: ["X-Issuerd-Signature": "t=1,v1=" + String(repeating: "ab", count: 32)])
        #expect(bad.status == 401)
        let old = try app.client.postJSON(
            "/v1/tsp/tokenization/authorize", body,
            headers: ["X-Issuerd-Signature": try app.tspSignature(body, at: Date().addingTimeInterval(-600))])
        #expect(old.status == 401)
        let signature = try app.tspSignature(body)
        let first = try app.client.postJSON(
            "/v1/tsp/tokenization/authorize", body, headers: ["X-Issuerd-Signature": signature])
        #expect(first.status == 200)
        let replay = try app.client.postJSON(
            "/v1/tsp/tokenization/authorize", body, headers: ["X-Issuerd-Signature": signature])
        #expect(replay.status == 401)
        #expect(replay.errorEnvelope()?["code"] as? String == "unauthenticated")
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 1)
    }

    @Test("An unknown card is 200 DECLINED card_not_found with an attempt; a bad PAN is 400")
    func unknownCard() throws {
        let app = try TestApplication()
        let response = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody(pan: "4000056655665556"))
        #expect(response.status == 200)
        let body = try #require(response.jsonObject())
        #expect(body["decision"] as? String == "DECLINED")
        #expect(body["flow"] as? String == "orange")
        let reasons = try #require(body["reasons"] as? [[String: Any]])
        #expect(reasons.map { $0["reason"] as? String } == ["card_not_found"])
        #expect(
            try DecisionFixtures.count(
                app,
                "SELECT count(*) FROM provisioning_attempts WHERE channel = 'tsp' AND card_id IS NULL AND decision = 'DECLINED'"
            ) == 1)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM tokens") == 0)
        #expect(!response.text.contains("4000056655665556"))
        let bad = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody(pan: "4111111111111112"))
        #expect(bad.status == 400)
        #expect(bad.errorEnvelope()?["code"] as? String == "invalid_request")
    }

    @Test("Green creates an active token once; a retry gets the same answer; expiry mismatch declines")
    func greenAndRetry() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let body = DecisionFixtures.authorizeBody(requestID: "req-1", tokenReference: "TOKEN-1")
        let first = try app.postAsTSP("/v1/tsp/tokenization/authorize", body)
        #expect(first.status == 200, "\(first.text)")
        #expect(first.jsonObject()?["decision"] as? String == "APPROVED")
        #expect((first.jsonObject()?["activationMethods"] as? [Any])?.isEmpty == true)
        // A TSP retry is signed anew (a later timestamp), so the replay guard lets it through.
        let retry = try app.client.postJSON(
            "/v1/tsp/tokenization/authorize", body,
            headers: ["X-Issuerd-Signature": try app.tspSignature(body, at: Date().addingTimeInterval(-2))])
        #expect(retry.status == 200)
        #expect(retry.body == first.body)
        #expect(
            try DecisionFixtures.count(
                app, "SELECT count(*) FROM tokens WHERE token_reference = 'TOKEN-1' AND status = 'active'") == 1)
        #expect(
            try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts WHERE channel = 'tsp'") == 1)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM audit_log WHERE action = 'token.created'") == 1)

        let other = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize",
            DecisionFixtures.authorizeBody(requestID: "req-2", tokenReference: "TOKEN-1"))
        #expect(other.status == 409)

        let mismatch = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody(expiration: "11/30"))
        #expect(mismatch.jsonObject()?["decision"] as? String == "DECLINED")
        #expect(
            (mismatch.jsonObject()?["reasons"] as? [[String: Any]])?.first?["reason"] as? String == "expiry_mismatch")

        let declined = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody(recommendation: "DECLINED"))
        #expect(declined.jsonObject()?["decision"] as? String == "DECLINED")
        #expect(
            (declined.jsonObject()?["reasons"] as? [[String: Any]])?.contains {
                $0["rule"] as? String == "invariant.wallet_declined"
            } == true)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM tokens") == 1)
        let audit = try AuditChainCheck.verify(database: app.pool)
        #expect(audit.isIntact)
    }

    @Test("A yellow push makes the next TSP authorization of that card and device step up, with masked methods")
    func yellowPushCarriesIntoAuthorization() throws {
        let app = try TestApplication(rulesDirectory: try DecisionFixtures.pushStepUpRules())
        try DecisionFixtures.customer(app, "cust-1", phone: "01012345678", email: "hong.gildong@example.com")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        try DecisionFixtures.card(
            app, "card-2", customer: "cust-1", pan: DecisionFixtures.mastercardPAN, network: "mastercard")

        let push = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1",
            body: try DecisionFixtures.provisionBody(app, extra: ["device": ["id": "watch-1", "type": "watch"]]))
        #expect(push.status == 200, "\(push.text)")
        #expect((push.jsonObject()?["decision"] as? [String: Any])?["flow"] as? String == "yellow")
        #expect(push.jsonObject()?["encryptedPassData"] is String)

        // The other card, same device: no push, green.
        let otherCard = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize",
            DecisionFixtures.authorizeBody(pan: DecisionFixtures.mastercardPAN, deviceID: "watch-1"))
        #expect(otherCard.jsonObject()?["decision"] as? String == "APPROVED")

        let response = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize",
            DecisionFixtures.authorizeBody(tokenReference: "TOKEN-Y", deviceID: "watch-1"))
        #expect(response.status == 200)
        let body = try #require(response.jsonObject())
        #expect(body["decision"] as? String == "REQUIRE_ADDITIONAL_AUTHENTICATION")
        #expect(body["flow"] as? String == "yellow")
        #expect(
            (body["reasons"] as? [[String: Any]])?.contains { $0["reason"] as? String == "IN_APP_STEP_UP_REQUIRED" }
                == true)
        let methods = try #require(body["activationMethods"] as? [[String: String]])
        // The push's rule allowed sms, email and app: no ARS.
        #expect(methods.map { $0["id"] ?? "" } == ["sms-1", "email-1", "app-1"])
        #expect(methods.first { $0["type"] == "sms" }?["value"] == "010-****-5678")
        #expect(methods.first { $0["type"] == "email" }?["value"] == "h********g@example.com")
        #expect(!response.text.contains("01012345678"))
        #expect(
            try DecisionFixtures.count(
                app, "SELECT count(*) FROM tokens WHERE token_reference = 'TOKEN-Y' AND status = 'pending_verification'"
            ) == 1)

        // The push was answered by that authorization: the next one is green again.
        let next = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody(deviceID: "watch-1"))
        #expect(next.jsonObject()?["decision"] as? String == "APPROVED")
    }

    @Test("Token events update the status, are audited, and feed token_deletions; unknown token is 404")
    func tokenEvents() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        #expect(
            try app.postAsTSP(
                "/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody(tokenReference: "TOKEN-E")
            ).status == 200)
        let at = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-5))
        for (index, (event, status)) in [
            ("suspended", "suspended"), ("resumed", "active"), ("deleted", "deleted"), ("resumed", "deleted"),
        ].enumerated() {
            let json = #"{"tokenReference":"TOKEN-E","event":"\#(event)","at":"\#(at)"}"#
            let response = try app.client.postJSON(
                "/v1/tsp/token-events", json,
                headers: [
                    "X-Issuerd-Signature": try app.tspSignature(json, at: Date().addingTimeInterval(-Double(index)))
                ])
            #expect(response.status == 204, "\(response.text)")
            #expect(
                try DecisionFixtures.count(
                    app, "SELECT count(*) FROM tokens WHERE token_reference = 'TOKEN-E' AND status = '\(status)'") == 1)
        }
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM audit_log WHERE subject = 'token:TOKEN-E'") == 5)
        let unknown = try app.postAsTSP(
            "/v1/tsp/token-events", #"{"tokenReference":"NOPE","event":"deleted","at":"\#(at)"}"#)
        #expect(unknown.status == 404)
        #expect(unknown.errorEnvelope()?["code"] as? String == "token_not_found")
        let badEvent = try app.postAsTSP(
            "/v1/tsp/token-events", #"{"tokenReference":"TOKEN-E","event":"exploded","at":"\#(at)"}"#)
        #expect(badEvent.status == 400)

        // The deletion is now history for the velocity rules.
        let next = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody(tokenReference: "TOKEN-F"))
        let attemptID = try #require(next.jsonObject()?["attemptId"] as? String)
        let explain = try app.client.get(
            "/v1/admin/attempts/\(attemptID)", headers: ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"])
        let features = try #require(explain.jsonObject()?["features"] as? [String: Any])
        #expect(features["token_deletions(card, 30d)"] as? Int == 1)
        #expect(features["attempts(card, 24h)"] as? Int == 1)
        let inputs = try #require(explain.jsonObject()?["inputs"] as? [String: Any])
        #expect(inputs["wallet.device_score"] as? Int == 4)
        #expect(inputs["request.source"] as? String == "push")
        #expect(inputs["card.active_tokens"] as? Int == 0)
    }

    @Test("Attempts: unknown id 404, IVR key 403, no key 401")
    func attemptAccess() throws {
        let app = try TestApplication()
        let analyst = try app.apiKey(role: .analyst)
        #expect(
            try app.client.get(
                "/v1/admin/attempts/\(UUID().uuidString)", headers: ["Authorization": "Bearer \(analyst)"]
            ).status == 404)
        #expect(
            try app.client.get("/v1/admin/attempts/not-a-uuid", headers: ["Authorization": "Bearer \(analyst)"]).status
                == 404)
        #expect(
            try app.client.get(
                "/v1/admin/attempts/\(UUID().uuidString)",
                headers: ["Authorization": "Bearer \(try app.apiKey(role: .ivr))"]
            ).status == 403)
        #expect(try app.client.get("/v1/admin/attempts/\(UUID().uuidString)").status == 401)
    }
}
