import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// A reissued Mastercard card's tokens moved through the Customer Service API: the fake checks
/// every OAuth signature with Mastercard's signer and decrypts `/token/update` with Mastercard's
/// client-encryption library, against a real PostgreSQL.
@Suite("Card reissue: Mastercard tokens through the Customer Service API")
struct ReissueCustomerServiceTests {
    static func requests(_ seen: [[String: Any]], _ operation: String) -> [[String: Any]] {
        seen.filter { $0["operation"] as? String == operation }
    }

    @Test(
        "A lost card with two tokens, reissued and activated: one signed /token/update decrypting to the old and new PAN and expiry, then unsuspend F; tokens active under the new card"
    )
    func lostCardMoves() throws {
        let fixture = try ReissueFixture()
        let pan = try fixture.card("card-l", customer: "c-l", serial: 401)
        let first = CustomerServiceOutboxTests.tokenUniqueReference()
        let second = CustomerServiceOutboxTests.tokenUniqueReference()
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: first, card: "card-l")
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: second, card: "card-l")
        try fixture.fake.accounts([pan: [first, second]])
        #expect(try fixture.status("card-l", "lost").status == 200)
        _ = try fixture.fake.wait { Self.requests($0, "suspend").count >= 2 }

        let newPAN = ReissueFixture.newPAN(402)
        let started = try fixture.reissue(
            "card-l",
            #"{"reason":"lost","newCard":{"cardId":"card-l2","accountNumber":"\#(newPAN)","expiration":"\#(ReissueFixture.newExpiration)"}}"#
        )
        #expect(started.status == 202, "\(started.text)")
        let id = try #require(started.jsonObject()?["reissueId"] as? String)
        #expect(try fixture.status("card-l2", "active").status == 200)

        let seen = try fixture.fake.wait { Self.requests($0, "unsuspend").count >= 2 }
        let updates = Self.requests(seen, "update")
        try #require(updates.count == 1)
        CustomerServiceOutboxTests.expectSignedAndValid(updates[0])
        let root = try #require(updates[0].csapiRequest)
        #expect(root["UpdateWalletProviderIndicator"] as? String == "0")
        #expect(root["TokenUniqueReference"] == nil)
        #expect(!(updates[0]["body"].map { "\($0)" } ?? "").contains(newPAN))
        let decrypted = try #require(updates[0]["decrypted"] as? [String: Any])
        #expect((decrypted["CurrentAccount"] as? [String: String]) == ["AccountPan": pan])
        let expiry = ReissueFixture.newExpiration
        #expect(
            (decrypted["NewAccount"] as? [String: String]) == [
                "AccountPan": newPAN, "ExpirationDate": String(expiry.prefix(2) + expiry.suffix(2)),
            ])
        // Unsuspended (F) after the move, both of them, each signed.
        let unsuspends = Self.requests(seen, "unsuspend")
        #expect(Set(unsuspends.compactMap { $0.csapiRequest?["TokenUniqueReference"] as? String }) == [first, second])
        for request in unsuspends {
            CustomerServiceOutboxTests.expectSignedAndValid(request)
            #expect(request.csapiRequest?["ReasonCode"] as? String == "F")
        }
        let operations = seen.compactMap { $0["operation"] as? String }
        #expect(operations.lastIndex(of: "update")! < operations.firstIndex(of: "unsuspend")!)

        let view = try fixture.waitForReissue(id) { $0["status"] as? String == "completed" }
        #expect(view["status"] as? String == "completed")
        #expect(ReissueFixture.tokenStates(view) == [first: "confirmed", second: "confirmed"])
        #expect(try AdminFixtures.tokenStatuses(fixture.app, card: "card-l2") == [first: "active", second: "active"])
        let cards = try fixture.app.client.get(
            "/v1/cards", headers: ["Authorization": "Bearer \(try fixture.app.appToken(customer: "c-l"))"])
        let listed = try #require(cards.jsonObject()?["cards"] as? [[String: Any]])
        #expect(listed.compactMap { $0["cardId"] as? String } == ["card-l2"])
        #expect(listed.first?["primaryAccountSuffix"] as? String == String(newPAN.suffix(4)))
        let old = try #require(
            fixture.app.client.get("/v1/admin/cards/card-l", headers: AdminFixtures.bearer(fixture.admin)).jsonObject())
        #expect(listed.first?["primaryAccountIdentifier"] as? String == old["primaryAccountIdentifier"] as? String)
    }

    @Test(
        "token_fraud deletes the named token (T) and the one awaiting activation (Z) before the other moves, at once"
    )
    func tokenFraudDeletesAndMoves() throws {
        let fixture = try ReissueFixture()
        let pan = try fixture.card("card-f", customer: "c-f", serial: 410)
        let fraud = CustomerServiceOutboxTests.tokenUniqueReference()
        let kept = CustomerServiceOutboxTests.tokenUniqueReference()
        let unactivated = CustomerServiceOutboxTests.tokenUniqueReference()
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: fraud, card: "card-f")
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: kept, card: "card-f")
        try CustomerServiceOutboxTests.insertToken(
            fixture.app, reference: unactivated, card: "card-f", status: "pending_verification")
        try fixture.fake.accounts([pan: [kept]])
        let started = try fixture.reissue(
            "card-f",
            #"{"reason":"token_fraud","newCard":{"cardId":"card-f2","accountNumber":"\#(ReissueFixture.newPAN(411))","expiration":"\#(ReissueFixture.newExpiration)"},"fraudTokens":["\#(fraud)"],"applyAt":"now","notifyWallet":false}"#
        )
        #expect(started.status == 202, "\(started.text)")
        let id = try #require(started.jsonObject()?["reissueId"] as? String)
        let view = try fixture.waitForReissue(id) { $0["status"] as? String == "completed" }
        #expect(view["status"] as? String == "completed")
        #expect(ReissueFixture.tokenStates(view) == [fraud: "confirmed", kept: "confirmed", unactivated: "confirmed"])
        let actions = Dictionary(
            uniqueKeysWithValues: (view["tokens"] as? [[String: Any]] ?? []).map {
                ($0["tokenReference"] as? String ?? "", $0["action"] as? String ?? "")
            })
        #expect(actions == [fraud: "delete", kept: "move", unactivated: "delete"])

        let seen = try fixture.fake.requests()
        let deletes = Self.requests(seen, "delete")
        var reasons: [String: String] = [:]
        for request in deletes {
            CustomerServiceOutboxTests.expectSignedAndValid(request)
            reasons[request.csapiRequest?["TokenUniqueReference"] as? String ?? ""] =
                request.csapiRequest?["ReasonCode"] as? String
        }
        #expect(reasons == [fraud: "T", unactivated: "Z"])
        let updates = Self.requests(seen, "update")
        try #require(updates.count == 1)
        #expect(updates[0].csapiRequest?["UpdateWalletProviderIndicator"] as? String == "1")
        #expect(Self.requests(seen, "unsuspend").isEmpty)
        #expect(try AdminFixtures.tokenStatuses(fixture.app, card: "card-f2") == [kept: "active"])
        #expect(
            try AdminFixtures.tokenStatuses(fixture.app, card: "card-f") == [fraud: "deleted", unactivated: "deleted"])
    }

    @Test(
        "A 503 on /token/update is retried until confirmed; a Recoverable false error marks the tokens failed with it")
    func retriedAndFailed() throws {
        let fixture = try ReissueFixture()
        let pan = try fixture.card("card-e1", customer: "c-e1", serial: 420)
        let token = CustomerServiceOutboxTests.tokenUniqueReference()
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: token, card: "card-e1")
        try fixture.fake.accounts([pan: [token]])
        try fixture.fake.plan(
            "update",
            [
                (
                    503,
                    [
                        [
                            "Source": "System", "ReasonCode": "SERVICE_UNAVAILABLE", "ErrorCode": "E0000503",
                            "Description": "Try again later", "Recoverable": "true",
                        ]
                    ]
                )
            ])
        let retried = try fixture.reissue(
            "card-e1",
            #"{"reason":"renewal","newCard":{"expiration":"\#(ReissueFixture.newExpiration)"},"applyAt":"now"}"#)
        let retriedID = try #require(retried.jsonObject()?["reissueId"] as? String, "\(retried.text)")
        let done = try fixture.waitForReissue(retriedID) { $0["status"] as? String == "completed" }
        #expect(done["status"] as? String == "completed")
        #expect(Self.requests(try fixture.fake.requests(), "update").count == 2)

        let other = try fixture.card("card-e2", customer: "c-e2", serial: 421)
        let refused = CustomerServiceOutboxTests.tokenUniqueReference()
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: refused, card: "card-e2")
        try fixture.fake.accounts([other: [refused]])
        try fixture.fake.plan(
            "update",
            [
                (
                    400,
                    [
                        [
                            "Source": "NewAccount.AccountPan", "ReasonCode": "INVALID_PAN_RANGE",
                            "ErrorCode": "E0010041", "Description": "The new PAN is in another account range",
                            "Recoverable": "false",
                        ]
                    ]
                )
            ])
        let failing = try fixture.reissue(
            "card-e2",
            #"{"reason":"compromised","newCard":{"accountNumber":"\#(ReissueFixture.newPAN(422))","expiration":"\#(ReissueFixture.newExpiration)"},"applyAt":"now"}"#
        )
        let failingID = try #require(failing.jsonObject()?["reissueId"] as? String, "\(failing.text)")
        let failed = try fixture.waitForReissue(failingID) { $0["status"] as? String == "failed" }
        #expect(failed["status"] as? String == "failed")
        let entry = try #require((failed["tokens"] as? [[String: Any]])?.first)
        #expect(entry["state"] as? String == "failed")
        #expect((entry["error"] as? String)?.contains("INVALID_PAN_RANGE") == true)
        #expect(Self.requests(try fixture.fake.requests(), "update").count == 3)
    }

    @Test(
        "MDES FUNDING_ACCOUNT_UPDATE confirms a reissued token; one for a token nobody reissued raises the metric and an audit entry"
    )
    func notificationsConfirmOrAlert() throws {
        let directory = try TestScratch.directory("issuerd-reissue-ntu")
        let certificate = directory.appendingPathComponent("mastercard.pem")
        try GooglePayFixtures.mastercard.certificatePEM.write(to: certificate, atomically: true, encoding: .utf8)
        let fixture = try MDESFixture(environment: ["ISSUERD_MDES_MASTERCARD_CERT": certificate.path])
        let app = fixture.app
        let admin = try app.apiKey(role: .admin)
        let reissued = CustomerServiceOutboxTests.tokenUniqueReference()
        let stranger = CustomerServiceOutboxTests.tokenUniqueReference()
        try CustomerServiceOutboxTests.insertToken(app, reference: reissued, card: "card-1")
        try DecisionFixtures.card(
            app, "card-2", customer: "cust-1", pan: AdminFixtures.pan(prefix: "539999", serial: 430),
            network: "mastercard")
        try CustomerServiceOutboxTests.insertToken(app, reference: stranger, card: "card-2")
        // No Customer Service API here: the update stays queued and the token's move unconfirmed.
        let started = try app.client.postJSON(
            "/v1/admin/cards/card-1/reissue",
            #"{"reason":"renewal","newCard":{"expiration":"\#(ReissueFixture.newExpiration)"},"applyAt":"now"}"#,
            headers: AdminFixtures.bearer(admin))
        let id = try #require(started.jsonObject()?["reissueId"] as? String, "\(started.text)")

        let metric = "issuerd_unrequested_account_updates_total{reason=\"FUNDING_ACCOUNT_UPDATE\"}"
        #expect(try app.client.get("/metrics").text.contains("\(metric) 0"))
        for (index, token) in [reissued, stranger].enumerated() {
            let ntu = try fixture.post(
                "notifyTokenUpdated",
                #"{"requestId":"ntu-r\#(index)","reasonCode":"FUNDING_ACCOUNT_UPDATE","tokens":[{"tokenUniqueReference":"\#(token)"}]}"#
            )
            #expect(ntu.status == 200, "\(ntu.text)")
        }
        let view = try app.client.get("/v1/admin/reissues/\(id)", headers: AdminFixtures.bearer(admin)).jsonObject()
        #expect(view?["status"] as? String == "completed")
        #expect(ReissueFixture.tokenStates(view ?? [:]) == [reissued: "confirmed"])
        #expect(try app.client.get("/metrics").text.contains("\(metric) 1"))
        #expect(
            try fixture.count(
                "SELECT count(*) FROM audit_log WHERE action = 'token.unrequested_account_update' AND subject = 'token:\(stranger)'"
            ) == 1)
        #expect(
            try fixture.count("SELECT count(*) FROM audit_log WHERE action = 'token.unrequested_account_update'") == 1)
    }
}
