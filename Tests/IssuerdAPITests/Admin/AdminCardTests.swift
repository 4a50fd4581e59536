import Foundation
import IssuerdCrypto
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("Admin customers and cards over HTTP")
struct AdminCardTests {
    @Test("A customer is created (201) then updated (200); the answer masks phone and e-mail; both are audited")
    func customerUpsert() throws {
        let app = try TestApplication()
        let key = try app.apiKey(role: .admin)
        let created = try app.client.postJSON(
            "/v1/admin/customers",
            #"{"customerId":"cust-1","phoneNumber":"01012345678","email":"hong.gildong@example.com"}"#,
            headers: AdminFixtures.bearer(key))
        #expect(created.status == 201)
        let body = try #require(created.jsonObject())
        #expect(body["customerId"] as? String == "cust-1")
        #expect(body["phoneNumber"] as? String == "010-****-5678")
        #expect(body["email"] as? String == "h********g@example.com")
        #expect(!created.text.contains("01012345678"))
        #expect(!created.text.contains("hong.gildong"))

        let updated = try app.client.postJSON(
            "/v1/admin/customers",
            #"{"customerId":"cust-1","phoneNumber":"01099998888","phoneChangedAt":"2025-03-01T10:00:00Z"}"#,
            headers: AdminFixtures.bearer(key))
        #expect(updated.status == 200)
        #expect(updated.jsonObject()?["phoneChangedAt"] as? String == "2025-03-01T10:00:00Z")
        let stored = try app.pool.withConnection { try CustomerStore.find("cust-1", connection: $0) }
        #expect(stored?.phoneNumber == "01099998888")

        let actions = try app.pool.withConnection { connection in
            try connection.query("SELECT action FROM audit_log ORDER BY id").map {
                try $0.decode("action", as: String.self)
            }
        }
        #expect(actions == ["customer.created", "customer.updated"])
        #expect(try AuditChainCheck.verify(database: app.pool).isIntact)
    }

    @Test(
        "An upsert racing another writer's insert of the same new customer (an import, a second call) updates it: 200, not a 500"
    )
    func customerUpsertRacingInsert() throws {
        let app = try TestApplication()
        let key = try app.apiKey(role: .admin)
        // The other writer (an import's COPY, or a concurrent call) inserted the customer and has
        // not committed yet: the upsert cannot see the row, and its insert waits on the key.
        let other = try PostgresConnection(connectionString: app.database.connectionString)
        let otherPID = other.backendProcessID
        try other.execute("BEGIN")
        try other.execute("INSERT INTO customers (customer_id, phone_number) VALUES ('cust-race', '01011112222')")
        let upsert = BackgroundCall {
            try app.client.postJSON(
                "/v1/admin/customers", #"{"customerId":"cust-race","email":"race@example.com"}"#,
                headers: AdminFixtures.bearer(key))
        }
        // The upsert's insert waits on the key; then the other writer commits.
        let (waiting, activity) = try app.database.waitUntilBlocked(by: otherPID, within: 120)
        #expect(waiting, "the upsert never waited on the other writer's row: \(activity)")
        try other.execute("COMMIT")
        let response = try #require(upsert.result(within: 20), "the upsert did not answer").get()
        #expect(response.status == 200, "\(response.text)")
        #expect(response.jsonObject()?["created"] as? Bool == false)
        // Both writes hold: the other writer's phone number and the upsert's e-mail.
        let stored = try #require(try app.pool.withConnection { try CustomerStore.find("cust-race", connection: $0) })
        #expect(stored.phoneNumber == "01011112222")
        #expect(stored.email == "race@example.com")
        let actions = try app.pool.withConnection { connection in
            try connection.query("SELECT action FROM audit_log ORDER BY id").map {
                try $0.decode("action", as: String.self)
            }
        }
        #expect(actions == ["customer.updated"])
    }

    @Test(
        "An admin write whose Idempotency-Key claim was taken over while it worked rolls its change back and answers 409"
    )
    func adminWriteTakenOverRollsBack() throws {
        let app = try TestApplication()
        let key = try app.apiKey(role: .admin)
        #expect(
            try app.client.postJSON(
                "/v1/admin/customers", #"{"customerId":"cust-t","email":"before@example.com"}"#,
                headers: AdminFixtures.bearer(key)
            ).status == 201)
        // Hold the customer, so the keyed upsert claims its key and then waits inside its work.
        let other = try PostgresConnection(connectionString: app.database.connectionString)
        let otherPID = other.backendProcessID
        try other.execute("BEGIN")
        _ = try other.query("SELECT 1 FROM customers WHERE customer_id = 'cust-t' FOR UPDATE")
        let upsert = BackgroundCall {
            try app.client.postJSON(
                "/v1/admin/customers", #"{"customerId":"cust-t","email":"after@example.com"}"#,
                headers: AdminFixtures.bearer(key).merging(["Idempotency-Key": "k-admin"]) { _, new in new })
        }
        let (waiting, activity) = try app.database.waitUntilBlocked(by: otherPID, within: 120)
        #expect(waiting, "the upsert never waited on the customer: \(activity)")
        // What a retry after the claim's expiry does: it takes the claim over with its own token.
        let taken = try app.pool.withConnection {
            try $0.execute(
                "UPDATE idempotency_keys SET claim_token = gen_random_uuid() WHERE key = 'k-admin' AND status = 0")
        }
        #expect(taken == 1)
        try other.execute("COMMIT")
        let response = try #require(upsert.result(within: 20), "the upsert did not answer").get()
        #expect(response.status == 409, "\(response.text)")
        #expect(response.errorEnvelope()?["code"] as? String == "idempotency_key_reused")
        // Its change went with it: the stored address and the audit log are as before.
        let stored = try #require(try app.pool.withConnection { try CustomerStore.find("cust-t", connection: $0) })
        #expect(stored.email == "before@example.com")
        let actions = try app.pool.withConnection { connection in
            try connection.query("SELECT action FROM audit_log ORDER BY id").map {
                try $0.decode("action", as: String.self)
            }
        }
        #expect(actions == ["customer.created"])
    }

    @Test(
        "Customer fields out of bounds are 400 invalid_request naming the field",
        arguments: [
            (#"{"customerId":""}"#, "customerId"),
            (#"{"customerId":"has space"}"#, "customerId"),
            (#"{"customerId":"\#(String(repeating: "x", count: 65))"}"#, "customerId"),
            (#"{"customerId":"c","phoneNumber":"12"}"#, "phoneNumber"),
            (#"{"customerId":"c","phoneNumber":"+82 10 1234 5678 ext 99"}"#, "phoneNumber"),
            (#"{"customerId":"c","email":"no-at-sign"}"#, "email"),
            (#"{"customerId":"c","email":"a@b@c"}"#, "email"),
            (#"{"customerId":"c","email":"\#(String(repeating: "a", count: 250))@x.io"}"#, "email"),
            (#"{"customerId":"c","phoneChangedAt":"yesterday"}"#, "phoneChangedAt"),
            (#"{"customerId":"c","addressChangedAt":"2025-13-01T00:00:00Z"}"#, "addressChangedAt"),
        ])
    func customerValidation(body: String, field: String) throws {
        let app = try TestApplication()
        let response = try app.client.postJSON(
            "/v1/admin/customers", body, headers: AdminFixtures.bearer(try app.apiKey(role: .admin)))
        #expect(response.status == 400)
        let error = try #require(response.errorEnvelope())
        #expect(error["code"] as? String == "invalid_request")
        #expect(error["field"] as? String == field)
    }

    @Test("A card is registered without echoing its PAN, read back by an analyst, and audited with only its last four")
    func registerAndRead() throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        let pan = AdminFixtures.pan(serial: 7)
        _ = try app.client.postJSON(
            "/v1/admin/customers", #"{"customerId":"cust-7"}"#, headers: AdminFixtures.bearer(admin))
        let response = try app.client.postJSON(
            "/v1/admin/cards",
            #"{"customerId":"cust-7","accountNumber":"\#(pan)","expiration":"\#(AdminFixtures.futureExpiration)","cardholderName":"LEE","paymentNetwork":"visa","country":"KR"}"#,
            headers: AdminFixtures.bearer(admin))
        #expect(response.status == 201)
        #expect(!response.text.contains(pan))
        let card = try #require(response.jsonObject())
        let cardID = try #require(card["cardId"] as? String)
        #expect(cardID.hasPrefix("card_") && cardID.count == 29)
        #expect(card["primaryAccountSuffix"] as? String == String(pan.suffix(4)))
        #expect(card["status"] as? String == "active")
        #expect(card["localizedDescription"] as? String == "Visa •••• \(pan.suffix(4))")

        let analyst = try app.apiKey(role: .analyst)
        let read = try app.client.get("/v1/admin/cards/\(cardID)", headers: AdminFixtures.bearer(analyst))
        #expect(read.status == 200)
        #expect(read.jsonObject()?["cardId"] as? String == cardID)
        #expect(read.jsonObject()?["country"] as? String == "KR")
        #expect(
            try app.client.get("/v1/admin/cards/nope", headers: AdminFixtures.bearer(analyst)).errorEnvelope()?["code"]
                as? String == "card_not_found")

        // The stored PAN opens to the digits sent, and the audit entry holds no PAN.
        let record = try #require(try app.pool.withConnection { try CardStore.find(cardID, connection: $0) })
        #expect(
            try CardStore.openPAN(
                record,
                vault: PANVault(
                    keyRing: MasterKeyRing(keys: [1: SymmetricKey(bytes: Array(repeating: 0x42, count: 32))]))
            ).unsafeDigits == pan)
        let details = try app.pool.withConnection { connection in
            try connection.query("SELECT details FROM audit_log WHERE action = 'card.created'").map {
                try $0.decode("details", as: String.self)
            }
        }
        #expect(details.count == 1)
        #expect(!(details.first ?? pan).contains(pan))
    }

    @Test(
        "Bad card registrations are refused with the documented status and code",
        arguments: [
            ("accountNumber", "4111111111111112", 422, "invalid_card"),
            ("accountNumber", "41111111111111111111111", 422, "invalid_card"),
            ("expiration", "01/20", 422, "invalid_card"),
            ("expiration", "13/40", 400, "invalid_request"),
            ("expiration", "1/40", 400, "invalid_request"),
            ("paymentNetwork", "diners", 400, "invalid_request"),
            ("status", "stolen-ish", 400, "invalid_request"),
            ("country", "kr", 400, "invalid_request"),
            ("cardholderName", "", 400, "invalid_request"),
            ("cardholderName", String(repeating: "N", count: 129), 400, "invalid_request"),
            ("cardholderName", "KIM\u{7}", 400, "invalid_request"),
            // 100 characters as people see them, 200 Unicode scalars as the table's CHECK counts them.
            ("cardholderName", String(repeating: "e\u{301}", count: 100), 400, "invalid_request"),
            ("localizedDescription", String(repeating: "🇰🇷", count: 65), 400, "invalid_request"),
            ("customerId", "nobody", 404, "customer_not_found"),
            ("cardId", "bad id", 400, "invalid_request"),
            // The card's own number, or any card number, in its id: it would be stored in clear.
            ("cardId", AdminFixtures.pan(serial: 1), 400, "invalid_request"),
            ("cardId", "card-" + AdminFixtures.pan(serial: 2), 400, "invalid_request"),
            (
                "customerId", "cust:" + AdminFixtures.pan(serial: 3).replacingOccurrences(of: "1111", with: "1111-"),
                400, "invalid_request"
            ),
        ])
    func badCards(field: String, value: String, status: Int, code: String) throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        _ = try app.client.postJSON(
            "/v1/admin/customers", #"{"customerId":"cust-1"}"#, headers: AdminFixtures.bearer(admin))
        var fields = [
            "customerId": "cust-1", "accountNumber": AdminFixtures.pan(serial: 1),
            "expiration": AdminFixtures.futureExpiration,
            "cardholderName": "KIM", "paymentNetwork": "visa",
        ]
        fields[field] = value
        let body = String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
        let response = try app.client.postJSON("/v1/admin/cards", body, headers: AdminFixtures.bearer(admin))
        #expect(response.status == status, "\(field): \(response.text)")
        #expect(response.errorEnvelope()?["code"] as? String == code)
        #expect(!response.text.contains(AdminFixtures.pan(serial: 1)))
        let count = try app.pool.withConnection {
            try $0.query("SELECT count(*) AS n FROM cards").first?.decode("n", as: Int64.self)
        }
        #expect(count == 0)
    }

    @Test(
        "An admin write's idempotent answer commits with the change, so a lost acknowledgement replays instead of 409 or a second upsert"
    )
    func adminAnswersCommitWithTheChange() throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        var headers = AdminFixtures.bearer(admin)
        headers["Idempotency-Key"] = "onboard-7"
        let customer = try app.client.postJSON(
            "/v1/admin/customers", #"{"customerId":"c7","email":"c7@example.com"}"#, headers: headers)
        #expect(customer.status == 201, "\(customer.text)")
        headers["Idempotency-Key"] = "card-7"
        let body =
            #"{"cardId":"card-7","customerId":"c7","accountNumber":"\#(AdminFixtures.pan(serial: 7))","expiration":"\#(AdminFixtures.futureExpiration)","cardholderName":"KIM","paymentNetwork":"visa"}"#
        let card = try app.client.postJSON("/v1/admin/cards", body, headers: headers)
        #expect(card.status == 201, "\(card.text)")
        // One transaction id on the answer and on the row it describes: neither exists without the other.
        let together = try app.pool.withConnection { connection in
            try connection.query(
                """
                SELECT (SELECT count(*) FROM idempotency_keys k, customers c
                        WHERE k.key = 'onboard-7' AND k.status = 201 AND c.customer_id = 'c7' AND k.xmin = c.xmin) AS customers,
                       (SELECT count(*) FROM idempotency_keys k, cards c
                        WHERE k.key = 'card-7' AND k.status = 201 AND c.card_id = 'card-7' AND k.xmin = c.xmin) AS cards
                """
            ).first.map { [try $0.decode("customers", as: Int64.self), try $0.decode("cards", as: Int64.self)] }
        }
        #expect(together == [1, 1])
        // And a retry replays that answer (this part held before too: there the answer came from
        // the separate write after the transaction, which a crash in between would lose).
        let again = try app.client.postJSON("/v1/admin/cards", body, headers: headers)
        #expect(again.status == 201)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.body == card.body)
    }

    @Test("A duplicate card id or PAN is 409 already_exists; an Idempotency-Key replays the first answer")
    func duplicatesAndIdempotency() throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c1", card: "card-a", serial: 1)
        let sameID =
            #"{"cardId":"card-a","customerId":"c1","accountNumber":"\#(AdminFixtures.pan(serial: 2))","expiration":"\#(AdminFixtures.futureExpiration)","cardholderName":"KIM","paymentNetwork":"visa"}"#
        let first = try app.client.postJSON("/v1/admin/cards", sameID, headers: AdminFixtures.bearer(admin))
        #expect(first.status == 409)
        #expect(first.errorEnvelope()?["code"] as? String == "already_exists")
        let samePAN =
            #"{"cardId":"card-b","customerId":"c1","accountNumber":"\#(AdminFixtures.pan(serial: 1))","expiration":"\#(AdminFixtures.futureExpiration)","cardholderName":"KIM","paymentNetwork":"visa"}"#
        #expect(try app.client.postJSON("/v1/admin/cards", samePAN, headers: AdminFixtures.bearer(admin)).status == 409)

        var headers = AdminFixtures.bearer(admin)
        headers["Idempotency-Key"] = "import-42"
        let fresh =
            #"{"customerId":"c1","accountNumber":"\#(AdminFixtures.pan(serial: 3))","expiration":"\#(AdminFixtures.futureExpiration)","cardholderName":"KIM","paymentNetwork":"visa"}"#
        let once = try app.client.postJSON("/v1/admin/cards", fresh, headers: headers)
        let twice = try app.client.postJSON("/v1/admin/cards", fresh, headers: headers)
        #expect(once.status == 201)
        #expect(twice.status == 201)
        #expect(once.jsonObject()?["cardId"] as? String == twice.jsonObject()?["cardId"] as? String)
        #expect(twice.header("Idempotent-Replayed") == "true")
        #expect(try app.client.postJSON("/v1/admin/cards", samePAN, headers: headers).status == 409)
        let count = try app.pool.withConnection {
            try $0.query("SELECT count(*) AS n FROM cards").first?.decode("n", as: Int64.self)
        }
        #expect(count == 2)
    }

    @Test("Roles: ivr may do nothing here, analyst may read but not change, no key is 401")
    func roles() throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c1", card: "card-r", serial: 11)
        let analyst = AdminFixtures.bearer(try app.apiKey(role: .analyst))
        let ivr = AdminFixtures.bearer(try app.apiKey(role: .ivr))
        #expect(try app.client.get("/v1/admin/cards/card-r", headers: ivr).status == 403)
        #expect(try app.client.get("/v1/admin/cards/card-r").status == 401)
        #expect(
            try app.client.get("/v1/admin/cards/card-r", headers: ["Authorization": "Bearer isk_nope_nope"]).status
                == 401)
        for headers in [analyst, ivr] {
            #expect(
                try app.client.postJSON("/v1/admin/customers", #"{"customerId":"c2"}"#, headers: headers).status == 403)
            #expect(
                try app.client.postJSON("/v1/admin/cards/card-r/status", #"{"status":"lost"}"#, headers: headers).status
                    == 403)
            #expect(try app.client.postJSON("/v1/admin/cards", #"{}"#, headers: headers).status == 403)
        }
        #expect(
            try app.client.postJSON(
                "/v1/admin/customers", #"{"customerId":"c2"}"#,
                headers: ["Authorization": "Bearer \(try app.appToken(customer: "c1"))"]
            ).status == 401)
    }
}
