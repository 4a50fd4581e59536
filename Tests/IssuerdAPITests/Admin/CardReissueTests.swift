import Foundation
import IssuerdCrypto
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Shared by the reissue suites: an issuerd whose Mastercard tokens go to the fake Customer
/// Service API (which decrypts `/token/update` with Mastercard's library) and whose TSP tokens'
/// notifications go to a webhook receiver; both account-data certificates set.
final class ReissueFixture: @unchecked Sendable {  // immutable after init
    let fake: FakeCustomerServiceAPI
    let receiver: WebhookReceiver
    let app: TestApplication
    let admin: String

    init(extra: [String: String] = [:]) throws {
        fake = try FakeCustomerServiceAPI(decryptionKeyPEM: GooglePayFixtures.mastercard.privateKeyPEM)
        receiver = try WebhookReceiver()
        let directory = try TestScratch.directory("issuerd-reissue")
        let certificate = directory.appendingPathComponent("account-cert.pem")
        try GooglePayFixtures.mastercard.certificatePEM.write(to: certificate, atomically: true, encoding: .utf8)
        var environment = StepUpFlowTests.fastOutbox
        environment.merge(fake.environment) { $1 }
        environment["ISSUERD_TSP_WEBHOOK_URL"] = receiver.url + "/tsp"
        environment["ISSUERD_MDES_MASTERCARD_CERT"] = certificate.path
        environment["ISSUERD_TSP_ACCOUNT_CERT"] = certificate.path
        environment.merge(extra) { $1 }
        app = try TestApplication(environment: environment)
        admin = try app.apiKey(role: .admin)
    }

    /// Registers a customer and a card of `network` over HTTP; returns the PAN.
    @discardableResult
    func card(_ card: String, customer: String, serial: Int, network: String = "mastercard") throws -> String {
        let pan = AdminFixtures.pan(prefix: network == "mastercard" ? "539999" : "411111", serial: serial)
        let created = try app.client.postJSON(
            "/v1/admin/customers", #"{"customerId":"\#(customer)","phoneNumber":"010-1234-5678"}"#,
            headers: AdminFixtures.bearer(admin))
        try #require([200, 201].contains(created.status), "\(created.text)")
        let response = try app.client.postJSON(
            "/v1/admin/cards",
            #"{"cardId":"\#(card)","customerId":"\#(customer)","accountNumber":"\#(pan)","expiration":"\#(AdminFixtures.futureExpiration)","cardholderName":"KIM MINJI","paymentNetwork":"\#(network)"}"#,
            headers: AdminFixtures.bearer(admin))
        try #require(response.status == 201, "\(response.text)")
        return pan
    }

    func reissue(_ card: String, _ body: String, key: String? = nil) throws -> TestHTTPResponse {
        var headers = AdminFixtures.bearer(admin)
        if let key { headers["Idempotency-Key"] = key }
        return try app.client.postJSON("/v1/admin/cards/\(card)/reissue", body, headers: headers)
    }

    func status(_ card: String, _ status: String) throws -> TestHTTPResponse {
        try app.client.postJSON(
            "/v1/admin/cards/\(card)/status", #"{"status":"\#(status)","reason":"test"}"#,
            headers: AdminFixtures.bearer(admin))
    }

    func reissueView(_ id: String) throws -> [String: Any] {
        let response = try app.client.get("/v1/admin/reissues/\(id)", headers: AdminFixtures.bearer(admin))
        try #require(response.status == 200, "\(response.text)")
        return try #require(response.jsonObject())
    }

    /// Polls the reissue until `condition` holds on it (at most 20 s).
    func waitForReissue(_ id: String, _ condition: ([String: Any]) -> Bool) throws -> [String: Any] {
        var view = try reissueView(id)
        let deadline = Date().addingTimeInterval(20)
        while !condition(view) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            view = try reissueView(id)
        }
        return view
    }

    static func tokenStates(_ view: [String: Any]) -> [String: String] {
        var states: [String: String] = [:]
        for token in view["tokens"] as? [[String: Any]] ?? [] {
            if let reference = token["tokenReference"] as? String { states[reference] = token["state"] as? String }
        }
        return states
    }

    /// A new Luhn-valid PAN of the card's range.
    static func newPAN(_ serial: Int, network: String = "mastercard") -> String {
        AdminFixtures.pan(prefix: network == "mastercard" ? "539999" : "411111", serial: serial)
    }

    /// An expiry further ahead than the registered one, `MM/YY`.
    static var newExpiration: String {
        let year = Calendar(identifier: .gregorian).component(.year, from: Date()) % 100 + 5
        return String(format: "09/%02d", year)
    }

    /// Every row a reissue could change, as text: the proof that a refusal changed nothing.
    func snapshot() throws -> [String] {
        try app.pool.withConnection { connection in
            var lines: [String] = []
            for sql in [
                "SELECT card_id || ':' || status || ':' || expiration || ':' || primary_account_identifier AS line FROM cards ORDER BY card_id",
                "SELECT token_reference || ':' || card_id || ':' || status || ':' || coalesce(issuer_suspended_from, '-') AS line FROM tokens ORDER BY token_reference",
                "SELECT reissue_id::text || ':' || status AS line FROM card_reissues ORDER BY reissue_id",
                "SELECT token_reference || ':' || state AS line FROM card_reissue_tokens ORDER BY token_reference",
                "SELECT dedup_key AS line FROM outbox ORDER BY dedup_key",
                "SELECT 'audit ' || count(*)::text AS line FROM audit_log",
                "SELECT 'events ' || count(*)::text AS line FROM token_events",
                "SELECT 'history ' || count(*)::text AS line FROM card_status_history",
                "SELECT 'idempotency ' || count(*)::text AS line FROM idempotency_keys",
            ] {
                for row in try connection.query(PostgresQuery(unsafeSQL: sql)) { lines.append(try row.decode("line")) }
            }
            return lines
        }
    }
}

@Suite("Card reissue: the admin routes")
struct CardReissueTests {
    @Test("Every bad input is a clear 400 or 409 and leaves the database as it was")
    func badInputsChangeNothing() throws {
        let fixture = try ReissueFixture()
        let pan = try fixture.card("card-a", customer: "c-a", serial: 301)
        let otherPAN = try fixture.card("card-b", customer: "c-b", serial: 302)
        try fixture.card("card-closed", customer: "c-c", serial: 303)
        #expect(try fixture.status("card-closed", "closed").status == 200)
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: "tok-a-1", card: "card-a")
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: "tok-b-1", card: "card-b")
        let expiry = ReissueFixture.newExpiration
        let cases: [(card: String, body: String, status: Int, code: String)] = [
            ("card-a", #"{"reason":"misplaced","newCard":{"expiration":"\#(expiry)"}}"#, 400, "invalid_request"),
            ("card-a", #"{"reason":"lost","newCard":{"expiration":"\#(expiry)"}}"#, 400, "pan_must_change"),
            (
                "card-a", #"{"reason":"stolen","newCard":{"accountNumber":"\#(pan)","expiration":"\#(expiry)"}}"#, 400,
                "pan_must_change"
            ),
            (
                "card-a",
                #"{"reason":"compromised","newCard":{"accountNumber":"\#(otherPAN)","expiration":"\#(expiry)"}}"#,
                409, "pan_in_use"
            ),
            ("card-closed", #"{"reason":"renewal","newCard":{"expiration":"\#(expiry)"}}"#, 409, "invalid_state"),
            (
                "card-a",
                #"{"reason":"token_fraud","newCard":{"accountNumber":"\#(ReissueFixture.newPAN(310))","expiration":"\#(expiry)"},"fraudTokens":["tok-b-1"]}"#,
                400, "invalid_request"
            ),
            (
                "card-a", #"{"reason":"renewal","newCard":{"expiration":"\#(expiry)"},"fraudTokens":["tok-a-1"]}"#,
                400, "invalid_request"
            ),
            ("card-a", #"{"reason":"renewal","newCard":{"expiration":"13/30"}}"#, 400, "invalid_request"),
            ("card-a", #"{"reason":"renewal","newCard":{"expiration":"0930"}}"#, 400, "invalid_request"),
            (
                "card-a", #"{"reason":"renewal","newCard":{"expiration":"\#(expiry)"},"applyAt":"later"}"#, 400,
                "invalid_request"
            ),
            (
                "card-a", #"{"reason":"renewal","newCard":{"cardId":"card-b","expiration":"\#(expiry)"}}"#, 409,
                "already_exists"
            ),
        ]
        let before = try fixture.snapshot()
        for (index, item) in cases.enumerated() {
            let response = try fixture.reissue(item.card, item.body, key: "bad-\(index)")
            #expect(response.status == item.status, "case \(index): \(response.text)")
            #expect(response.errorEnvelope()?["code"] as? String == item.code, "case \(index): \(response.text)")
            #expect(!response.text.contains(pan) && !response.text.contains(otherPAN))
        }
        // Refusals stored for their keys are the only difference.
        let after = try fixture.snapshot().filter { !$0.hasPrefix("idempotency ") }
        #expect(after == before.filter { !$0.hasPrefix("idempotency ") })

        // A reissue waiting for activation: a second one is 409 and changes nothing.
        let first = try fixture.reissue("card-a", #"{"reason":"renewal","newCard":{"expiration":"\#(expiry)"}}"#)
        #expect(first.status == 202, "\(first.text)")
        let waiting = try fixture.snapshot()
        let second = try fixture.reissue(
            "card-a", #"{"reason":"damaged","newCard":{"expiration":"\#(expiry)"}}"#)
        #expect(second.status == 409)
        #expect(second.errorEnvelope()?["code"] as? String == "reissue_pending")
        // The waiting new card cannot be reissued either, nor given another status than active.
        let newCard = try #require(first.jsonObject()?["newCardId"] as? String)
        #expect(
            try fixture.reissue(newCard, #"{"reason":"renewal","newCard":{"expiration":"\#(expiry)"}}"#).status == 409)
        #expect(try fixture.status(newCard, "lost").status == 409)
        #expect(try fixture.status("card-a", "replaced").status == 400)
        #expect(try fixture.snapshot() == waiting)
    }

    @Test(
        "A renewal waits for activation, keeps the identifier, then moves the tokens; the app lists only the new card; Idempotency-Key replays"
    )
    func renewalOnActivation() throws {
        let fixture = try ReissueFixture()
        let pan = try fixture.card("card-r", customer: "c-r", serial: 320)
        let token = CustomerServiceOutboxTests.tokenUniqueReference()
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: token, card: "card-r")
        try fixture.fake.accounts([pan: [token]])
        let body =
            #"{"reason":"renewal","newCard":{"cardId":"card-r2","expiration":"\#(ReissueFixture.newExpiration)","panSequenceNumber":"01"}}"#
        let started = try fixture.reissue("card-r", body, key: "renew-1")
        #expect(started.status == 202, "\(started.text)")
        let answer = try #require(started.jsonObject())
        #expect(answer["status"] as? String == "awaiting_activation")
        #expect(answer["oldCardId"] as? String == "card-r")
        #expect(answer["newCardId"] as? String == "card-r2")
        let replay = try fixture.reissue("card-r", body, key: "renew-1")
        #expect(replay.status == 202)
        #expect(replay.header("Idempotent-Replayed") == "true")
        #expect(replay.text == started.text)
        let id = try #require(answer["reissueId"] as? String)

        // Nothing moves before activation; the new card is inactive with the same identifier.
        let old = try #require(
            fixture.app.client.get("/v1/admin/cards/card-r", headers: AdminFixtures.bearer(fixture.admin)).jsonObject())
        let new = try #require(
            fixture.app.client.get("/v1/admin/cards/card-r2", headers: AdminFixtures.bearer(fixture.admin)).jsonObject()
        )
        #expect(new["status"] as? String == "inactive")
        #expect(new["primaryAccountIdentifier"] as? String == old["primaryAccountIdentifier"] as? String)
        #expect(try AdminFixtures.tokenStatuses(fixture.app, card: "card-r") == [token: "active"])
        #expect(try fixture.fake.requests().isEmpty)

        #expect(try fixture.status("card-r2", "active").status == 200)
        let seen = try fixture.fake.wait { $0.count >= 1 }
        try #require(seen.count == 1)
        #expect(seen[0]["operation"] as? String == "update")
        CustomerServiceOutboxTests.expectSignedAndValid(seen[0])
        // A renewal keeping the PAN sends only the new expiry (and the sequence number).
        let decrypted = try #require(seen[0]["decrypted"] as? [String: Any])
        #expect((decrypted["CurrentAccount"] as? [String: String]) == ["AccountPan": pan])
        let newAccount = try #require(decrypted["NewAccount"] as? [String: String])
        let expiry = ReissueFixture.newExpiration
        #expect(
            newAccount == [
                "ExpirationDate": String(expiry.prefix(2) + expiry.suffix(2)), "AccountPanSequenceNumber": "01",
            ])

        let view = try fixture.waitForReissue(id) { $0["status"] as? String == "completed" }
        #expect(view["status"] as? String == "completed")
        #expect(ReissueFixture.tokenStates(view) == [token: "confirmed"])
        #expect(try AdminFixtures.tokenStatuses(fixture.app, card: "card-r2") == [token: "active"])
        let tokens = try fixture.app.client.get(
            "/v1/admin/cards/card-r2/tokens", headers: AdminFixtures.bearer(fixture.admin))
        #expect((tokens.jsonObject()?["tokens"] as? [[String: Any]])?.count == 1)

        let cards = try fixture.app.client.get(
            "/v1/cards", headers: ["Authorization": "Bearer \(try fixture.app.appToken(customer: "c-r"))"])
        let listed = try #require(cards.jsonObject()?["cards"] as? [[String: Any]])
        #expect(listed.compactMap { $0["cardId"] as? String } == ["card-r2"])
        #expect(listed.first?["primaryAccountIdentifier"] as? String == old["primaryAccountIdentifier"] as? String)
        let replaced = try #require(
            fixture.app.client.get("/v1/admin/cards/card-r", headers: AdminFixtures.bearer(fixture.admin)).jsonObject())
        #expect(replaced["status"] as? String == "replaced")
        // A replaced card is final.
        #expect(try fixture.status("card-r", "active").status == 409)
    }

    @Test("A move through a network whose account-data certificate is not set is 422 and changes nothing")
    func accountCertificateMissing() throws {
        let fixture = try ReissueFixture(extra: ["ISSUERD_MDES_MASTERCARD_CERT": "", "ISSUERD_TSP_ACCOUNT_CERT": ""])
        try fixture.card("card-m", customer: "c-m", serial: 340)
        try fixture.card("card-t", customer: "c-t", serial: 341, network: "visa")
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: "tok-m-1", card: "card-m")
        try AdminFixtures.insertToken(fixture.app, reference: "tok-t-1", card: "card-t", status: "active")
        let before = try fixture.snapshot()
        for (card, code, setting) in [
            ("card-m", "mastercard_update_not_configured", "ISSUERD_MDES_MASTERCARD_CERT"),
            ("card-t", "tsp_account_cert_not_configured", "ISSUERD_TSP_ACCOUNT_CERT"),
        ] {
            let answer = try fixture.reissue(
                card,
                #"{"reason":"renewal","newCard":{"expiration":"\#(ReissueFixture.newExpiration)"},"applyAt":"now"}"#)
            #expect(answer.status == 422, "\(answer.text)")
            #expect(answer.text.contains(code) && answer.text.contains(setting), "\(answer.text)")
        }
        #expect(try fixture.snapshot() == before)
    }

    @Test("A Visa card's reissue sends one pan_lifecycle notification whose account data decrypts to the new PAN")
    func visaPANLifecycle() throws {
        let fixture = try ReissueFixture()
        let pan = try fixture.card("card-v", customer: "c-v", serial: 330, network: "visa")
        try AdminFixtures.insertToken(fixture.app, reference: "visa-tok-1", card: "card-v", status: "active")
        try AdminFixtures.insertToken(fixture.app, reference: "visa-tok-2", card: "card-v", status: "active")
        #expect(try fixture.status("card-v", "stolen").status == 200)
        let newPAN = ReissueFixture.newPAN(331, network: "visa")
        let started = try fixture.reissue(
            "card-v",
            #"{"reason":"stolen","newCard":{"cardId":"card-v2","accountNumber":"\#(newPAN)","expiration":"\#(ReissueFixture.newExpiration)"},"applyAt":"now"}"#
        )
        #expect(started.status == 202, "\(started.text)")
        #expect(started.jsonObject()?["status"] as? String == "in_progress")
        let id = try #require(started.jsonObject()?["reissueId"] as? String)
        let received = fixture.receiver.wait {
            $0.contains { $0.json?["event"] as? String == "pan_lifecycle" }
                && $0.filter { $0.json?["action"] as? String == "resume" }.count == 2
        }
        let notification = try #require(received.first { $0.json?["event"] as? String == "pan_lifecycle" })
        let body = try #require(notification.json)
        #expect(body["operation"] as? String == "ACCOUNT_UPDATE")
        #expect((body["tokenReferences"] as? [String])?.sorted() == ["visa-tok-1", "visa-tok-2"])
        #expect(body["resumeTokens"] == nil)
        #expect(!String(decoding: notification.body, as: UTF8.self).contains(newPAN))
        let encrypted = try #require(body["encryptedAccount"] as? [String: Any])
        let opened = try ReissueFixture.decrypt(encrypted)
        #expect((opened["NewAccount"] as? [String: String])?["AccountPan"] == newPAN)
        #expect((opened["CurrentAccount"] as? [String: String])?["AccountPan"] == pan)
        // The resumes follow the move: the old card's theft suspended the tokens, not the device's.
        let order = received.compactMap { $0.json?["event"] as? String ?? $0.json?["action"] as? String }
        #expect(order.firstIndex(of: "pan_lifecycle")! < order.firstIndex(of: "resume")!)
        let view = try fixture.waitForReissue(id) { $0["status"] as? String == "completed" }
        #expect(ReissueFixture.tokenStates(view) == ["visa-tok-1": "confirmed", "visa-tok-2": "confirmed"])
        #expect(
            try AdminFixtures.tokenStatuses(fixture.app, card: "card-v2") == [
                "visa-tok-1": "active", "visa-tok-2": "active",
            ])
    }
}

extension CardReissueTests {
    @Test(
        "cards reissue FILE.csv: bad lines by number, the good ones applied, progress on stderr; the same file again changes nothing"
    )
    func commandLine() throws {
        let fixture = try ReissueFixture()
        try fixture.card("card-x1", customer: "c-x1", serial: 501)
        try fixture.card("card-x2", customer: "c-x2", serial: 502)
        let newPAN = ReissueFixture.newPAN(503)
        // A card number put in card_id by mistake is never printed back.
        let strayPAN = ReissueFixture.newPAN(504)
        let expiry = ReissueFixture.newExpiration
        let file = fixture.app.directory.appendingPathComponent("reissues.csv")
        try """
        card_id,reason,expiration,new_card_id,account_number,pan_sequence_number,cardholder_name,apply_at
        card-x1,renewal,\(expiry),,,01,,
        card-x2,lost,\(expiry),card-x2b,\(newPAN),,,now
        card-x1,misplaced,\(expiry),,,,,
        \(strayPAN),renewal,\(expiry),,,,,

        card-x2,lost,\(expiry),card-x2c,,,,
        card-x1,renewal,13/31,,,,,
        card-x1,"renewal,\(expiry)

        """.write(to: file, atomically: true, encoding: .utf8)
        let environment = [
            "ISSUERD_DATABASE_URL": fixture.app.serviceConnectionString,
            "ISSUERD_MASTER_KEY": Data(repeating: 0x42, count: 32).base64EncodedString(),
        ]
        let run = try CommandLineRunner.run(
            ["cards", "reissue", "--progress-every", "2", file.path], environment: environment)
        #expect(run.status == 1, "\(run.standardOutput)\(run.standardError)")
        let lines = run.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.last == "cards reissue: reissued=2 unchanged=0 errors=5", "\(run.standardOutput)")
        #expect(
            lines.filter { $0.hasPrefix("line ") }.map { String($0.prefix(7)) } == [
                "line 4:", "line 5:", "line 7:", "line 8:", "line 9:",
            ])
        #expect(lines.contains { $0.hasPrefix("line 7:") && $0.contains("pan_must_change") })
        #expect(run.standardError.contains("cards reissue: 2 lines"))
        #expect(!run.standardOutput.contains(newPAN) && !run.standardError.contains(newPAN))
        #expect(
            !run.standardOutput.contains(strayPAN) && !run.standardError.contains(strayPAN), "\(run.standardOutput)")
        let x1 = try #require(
            fixture.app.client.get("/v1/admin/cards/card-x1", headers: AdminFixtures.bearer(fixture.admin)).jsonObject()
        )
        #expect(x1["status"] as? String == "active")
        let x2 = try #require(
            fixture.app.client.get("/v1/admin/cards/card-x2", headers: AdminFixtures.bearer(fixture.admin)).jsonObject()
        )
        #expect(x2["status"] as? String == "replaced")
        #expect(
            try DecisionFixtures.count(fixture.app, "SELECT count(*) FROM card_reissues WHERE old_card_id = 'card-x1'")
                == 1)

        let before = try fixture.snapshot()
        let again = try CommandLineRunner.run(["cards", "reissue", file.path], environment: environment)
        #expect(again.standardOutput.split(separator: "\n").last == "cards reissue: reissued=0 unchanged=2 errors=5")
        #expect(try fixture.snapshot() == before)

        let help = try CommandLineRunner.run(["cards", "reissue", "--help"], environment: environment)
        #expect(help.status == 0)
        #expect(help.standardOutput.contains("issuerd cards reissue FILE.csv"))
    }
}

extension CardReissueTests {
    @Test("A file line without new_card_id names one new card, stable, and never one refused as a card number")
    func derivedNewCardIDs() throws {
        let header = try CardReissueImport.parseHeader("card_id,reason,expiration,apply_at", line: 1)
        let now = Date()
        func derived(_ line: String) throws -> String {
            switch CardReissueImport.request(line, header: header, now: now) {
            case .success(let (_, validated)): return validated.newCardID
            case .failure(let problem): throw TestFailure("\(line): \(problem.reason)")
            }
        }
        // A derived id in hex held 12 to 19 Luhn-valid digits for two or three cards in a
        // thousand, and their lines were refused; letters never line up into a card number.
        var refused: [String] = []
        for serial in 0..<10000 {
            let line = "card-\(serial),renewal,\(ReissueFixture.newExpiration),now"
            do {
                let id = try derived(line)
                #expect(id.hasPrefix("card_") && id.count == 29 && !id.dropFirst(5).contains { $0.isNumber })
            } catch {
                refused.append(line)
            }
        }
        #expect(refused.isEmpty, "\(refused.count) lines refused, the first: \(refused.first ?? "")")
        let line = "card-7,renewal,\(ReissueFixture.newExpiration),now"
        #expect(try derived(line) == derived(line))
        #expect(try derived(line) != derived("card-8,renewal,\(ReissueFixture.newExpiration),now"))
    }

    @Test("A review case of a reissued card shows the reissue and each token's state (the console's card panel)")
    func casePanel() throws {
        let fixture = try ReissueFixture()
        _ = try ReviewQueueTests.seed(fixture.app)
        let started = try fixture.reissue(
            "card-1",
            #"{"reason":"damaged","newCard":{"expiration":"\#(ReissueFixture.newExpiration)"},"applyAt":"now"}"#)
        let id = try #require(started.jsonObject()?["reissueId"] as? String, "\(started.text)")
        _ = try fixture.waitForReissue(id) { $0["status"] as? String == "completed" }
        let analyst = try fixture.app.apiKey(role: .analyst)
        let list = try fixture.app.client.get("/v1/admin/cases", headers: AdminFixtures.bearer(analyst)).jsonObject()
        let caseID = try #require(
            (list?["cases"] as? [[String: Any]])?.first { $0["attemptId"] as? String == ReviewQueueTests.orange }?[
                "caseId"] as? String)
        let detail = try #require(
            fixture.app.client.get("/v1/admin/cases/\(caseID)", headers: AdminFixtures.bearer(analyst)).jsonObject())
        let reissues = try #require(detail["reissues"] as? [[String: Any]])
        #expect(reissues.count == 1)
        #expect(reissues.first?["reissueId"] as? String == id)
        #expect(reissues.first?["status"] as? String == "completed")
        #expect(
            ReissueFixture.tokenStates(reissues.first ?? [:]) == ["tok-done": "confirmed", "tok-late": "confirmed"])
        let actions = (reissues.first?["tokens"] as? [[String: Any]] ?? []).map { $0["action"] as? String ?? "" }
        #expect(actions.sorted() == ["delete", "move"])
        // The console's script renders the panel from this answer.
        let script = try String(
            contentsOf: TestApplication.repositoryRoot.appendingPathComponent(
                "Sources/IssuerdConsole/Resources/console.js"), encoding: .utf8)
        #expect(script.contains("result.json.reissues") && script.contains("reissue-tokens"))
    }
}

extension ReissueFixture {
    /// Opens account data encrypted to the test certificate with Mastercard's library.
    static func decrypt(_ envelope: [String: Any]) throws -> [String: Any] {
        guard let python = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !python.isEmpty else {
            throw TestFailure("ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test")
        }
        let script = TestApplication.repositoryRoot.appendingPathComponent(
            "Tests/IssuerdMDESTests/Oracle/mastercard_oracle.py"
        ).path
        let request: [String: Any] = [
            "op": "decrypt", "privateKeyPEM": GooglePayFixtures.mastercard.privateKeyPEM,
            "body": ["encryptedPayload": envelope],
        ]
        let output = try ExternalProcess.run(
            python, [script], input: try JSONSerialization.data(withJSONObject: request))
        guard output.status == 0 else { throw TestFailure("decrypt failed: \(output.stderr)") }
        let answer = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any]
        return try #require(answer?["plaintext"] as? [String: Any])
    }
}
