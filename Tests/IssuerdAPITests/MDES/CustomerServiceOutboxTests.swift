import Foundation
import IssuerdCrypto
import IssuerdKeys
import IssuerdOutbox
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Mastercard tokens (`tokens.service = 'mdes'`) changed through the Customer Service API: the
/// outbox's `mdes_csapi` messages delivered over real HTTP to a fake that checks every signature
/// with Mastercard's own signer library, against a real PostgreSQL.
@Suite("MDES Customer Service API through the outbox")
struct CustomerServiceOutboxTests {
    /// A 48-character token unique reference, as MDES makes them (`DAPLMC…`).
    static func tokenUniqueReference() -> String {
        "DAPLMC000014" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() + "0000"
    }

    static func app(_ fake: FakeCustomerServiceAPI?) throws -> TestApplication {
        var environment = StepUpFlowTests.fastOutbox
        if let fake { environment.merge(fake.environment) { $1 } }
        return try TestApplication(environment: environment)
    }

    static func insertToken(
        _ app: TestApplication, reference: String, card: String, status: String = "active", service: String = "mdes"
    ) throws {
        try app.pool.withConnection { connection in
            _ = try connection.execute(
                """
                INSERT INTO tokens (token_reference, card_id, status, service)
                VALUES (\(reference), \(card), \(status), \(service))
                """)
        }
    }

    static func setStatus(_ app: TestApplication, _ key: String, card: String, _ status: String) throws -> Int {
        try app.client.postJSON(
            "/v1/admin/cards/\(card)/status", #"{"status":"\#(status)","reason":"test"}"#,
            headers: AdminFixtures.bearer(key)
        ).status
    }

    /// The outbox rows of `kind` as (status, attempts, last error, token reference).
    static func outbox(
        _ app: TestApplication, kind: String
    ) throws -> [(
        status: String, attempts: Int, lastError: String?, token: String
    )] {
        try app.pool.withConnection { connection in
            try connection.query(
                "SELECT status, attempts, last_error, payload ->> 'tokenReference' AS token FROM outbox WHERE kind = \(kind) ORDER BY id"
            ).map {
                (
                    try $0.decode("status"), try $0.decode("attempts"), try $0.decode("last_error"),
                    try $0.decode("token")
                )
            }
        }
    }

    /// Polls `condition` until it holds (at most 20 seconds); returns whether it did.
    static func waitFor(_ condition: () throws -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return try condition()
    }

    /// Checks what every Mastercard signer-based check of the fake found.
    static func expectSignedAndValid(_ request: [String: Any]) {
        #expect(request["signatureValid"] as? Bool == true)
        #expect(request["bodyHashValid"] as? Bool == true)
        #expect(request["problem"] is NSNull)
        #expect(request["schemaProblem"] is NSNull)
        #expect(request["contentType"] as? String == "application/json")
        let audit = request.csapiRequest?["AuditInfo"] as? [String: String]
        #expect(audit == ["UserId": "issuerd-csr", "UserName": "issuerd automation", "Organization": "Test Bank"])
    }

    @Test(
        "Card lost → a signed suspend (L) for its Mastercard token; active again → unsuspend (F); closed → delete (C); a TSP token still gets its webhook message"
    )
    func cardLifecycle() throws {
        let fake = try FakeCustomerServiceAPI()
        let app = try Self.app(fake)
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c-mdes", card: "card-mdes", serial: 71)
        let mastercard = Self.tokenUniqueReference()
        try Self.insertToken(app, reference: mastercard, card: "card-mdes")
        try Self.insertToken(app, reference: "tsp-token-1", card: "card-mdes", service: "tsp")

        #expect(try Self.setStatus(app, admin, card: "card-mdes", "lost") == 200)
        var seen = try fake.wait { $0.count >= 1 }
        try #require(seen.count == 1)
        #expect(seen[0]["operation"] as? String == "suspend")
        #expect(seen[0]["path"] as? String == "/mdes/csapi/v2/token/suspend")
        Self.expectSignedAndValid(seen[0])
        #expect(seen[0].csapiRequest?["TokenUniqueReference"] as? String == mastercard)
        #expect(seen[0].csapiRequest?["ReasonCode"] as? String == "L")
        #expect(seen[0].csapiRequest?["CommentText"] as? String == "Card reported lost to the issuer")
        // The TSP token is announced to the TSP as before, not to Mastercard.
        #expect(try Self.outbox(app, kind: "tsp").map(\.token) == ["tsp-token-1"])
        #expect(try Self.outbox(app, kind: "mdes_csapi").map(\.token) == [mastercard])

        #expect(try Self.setStatus(app, admin, card: "card-mdes", "active") == 200)
        seen = try fake.wait { $0.count >= 2 }
        try #require(seen.count == 2)
        #expect(seen[1]["operation"] as? String == "unsuspend")
        Self.expectSignedAndValid(seen[1])
        #expect(seen[1].csapiRequest?["ReasonCode"] as? String == "F")
        #expect(seen[1].csapiRequest?["TokenUniqueReference"] as? String == mastercard)

        #expect(try Self.setStatus(app, admin, card: "card-mdes", "closed") == 200)
        seen = try fake.wait { $0.count >= 3 }
        try #require(seen.count == 3)
        #expect(seen[2]["operation"] as? String == "delete")
        Self.expectSignedAndValid(seen[2])
        #expect(seen[2].csapiRequest?["ReasonCode"] as? String == "C")
        #expect(seen[2].csapiRequest?["DeleteFromConsumerApp"] as? String == "false")

        // Fresh nonces, and every message delivered exactly once.
        #expect(Set(seen.compactMap { $0["nonce"] as? String }).count == 3)
        let rows = try Self.waitFor { try Self.outbox(app, kind: "mdes_csapi").allSatisfy { $0.status == "delivered" } }
        #expect(rows)
        #expect(try Self.outbox(app, kind: "mdes_csapi").map(\.attempts) == [1, 1, 1])

        // A stolen card's token: suspend with S.
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c-mdes-2", card: "card-mdes-2", serial: 72)
        let second = Self.tokenUniqueReference()
        try Self.insertToken(app, reference: second, card: "card-mdes-2")
        #expect(try Self.setStatus(app, admin, card: "card-mdes-2", "stolen") == 200)
        seen = try fake.wait { $0.count >= 4 }
        try #require(seen.count == 4)
        #expect(seen[3].csapiRequest?["ReasonCode"] as? String == "S")
        #expect(seen[3].csapiRequest?["TokenUniqueReference"] as? String == second)
    }

    @Test("A Mastercard token verified in the issuer app (In-App Verification) is activated with reason A")
    func inAppVerificationActivates() throws {
        let fake = try FakeCustomerServiceAPI()
        let app = try Self.app(fake)
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c-iav", card: "card-iav", serial: 73)
        let mastercard = Self.tokenUniqueReference()
        try Self.insertToken(app, reference: mastercard, card: "card-iav", status: "pending_verification")

        let response = try app.client.postJSON(
            "/v1/wallet/verifications", #"{"tokenReference":"\#(mastercard)"}"#,
            headers: ["Authorization": "Bearer \(try app.appToken(customer: "c-iav"))"])
        #expect(response.status == 200)
        let seen = try fake.wait { $0.count >= 1 }
        try #require(seen.count == 1)
        #expect(seen[0]["operation"] as? String == "activate")
        #expect(seen[0]["path"] as? String == "/mdes/csapi/v2/token/activate")
        Self.expectSignedAndValid(seen[0])
        #expect(seen[0].csapiRequest?["ReasonCode"] as? String == "A")
        #expect(seen[0].csapiRequest?["TokenUniqueReference"] as? String == mastercard)
        #expect(try Self.outbox(app, kind: "tsp").isEmpty)
    }

    @Test(
        "A code verified by the TSP activates a Mastercard token with reason A; one verified by the issuer's IVR (call centre) with C"
    )
    func codeVerificationActivates() throws {
        let fake = try FakeCustomerServiceAPI()
        let app = try Self.app(fake)
        let admin = try app.apiKey(role: .admin)
        let ivr = try app.apiKey(role: .ivr)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c-otp", card: "card-otp", serial: 77)
        let bySMS = Self.tokenUniqueReference()
        let byIVR = Self.tokenUniqueReference()
        try app.pool.transaction { connection in
            for token in [bySMS, byIVR] {
                let attemptID = UUID()
                try connection.execute(
                    """
                    INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, token_reference, inputs,
                                                       features, hits, flow, decision, allowed_methods, ruleset_version)
                    VALUES (\(attemptID), 'mdes', 'card-otp', 'c-otp', \(token), '{}', '{}', '[]', 'yellow',
                            'REQUIRE_ADDITIONAL_AUTHENTICATION', \(["sms", "ars"]), 'test')
                    """)
                try connection.execute(
                    """
                    INSERT INTO tokens (token_reference, card_id, status, attempt_id, service)
                    VALUES (\(token), 'card-otp', 'pending_verification', \(attemptID), 'mdes')
                    """)
            }
        }
        for (token, method) in [(bySMS, "sms-1"), (byIVR, "ars-1")] {
            let created = try app.postAsTSP(
                "/v1/tsp/activation-codes", #"{"tokenReference":"\#(token)","activationMethodId":"\#(method)"}"#)
            try #require(created.status == 201, "\(created.text)")
            let challengeID = try #require(created.jsonObject()?["challengeId"] as? String)
            let code = try #require(StepUpFixture.loggedCode(app, challengeID: challengeID))
            let body = #"{"tokenReference":"\#(token)","code":"\#(code)"}"#
            let verified =
                method == "sms-1"
                ? try app.postAsTSP("/v1/tsp/activation-codes/verify", body)
                : try app.client.postJSON(
                    "/v1/tsp/activation-codes/verify", body, headers: ["Authorization": "Bearer \(ivr)"])
            #expect(verified.jsonObject()?["result"] as? String == "verified", "\(verified.text)")
        }
        let seen = try fake.wait { $0.count >= 2 }
        try #require(seen.count == 2)
        var reasons: [String: String] = [:]
        for request in seen {
            #expect(request["operation"] as? String == "activate")
            Self.expectSignedAndValid(request)
            if let token = request.csapiRequest?["TokenUniqueReference"] as? String {
                reasons[token] = request.csapiRequest?["ReasonCode"] as? String
            }
        }
        #expect(reasons == [bySMS: "A", byIVR: "C"])
        #expect(try Self.outbox(app, kind: "tsp").isEmpty)
    }

    @Test(
        "A recoverable 503 is retried and then delivered; a non-recoverable error is a dead letter at once; both recorded with their ReasonCode"
    )
    func recoverableAndNot() throws {
        let fake = try FakeCustomerServiceAPI()
        let app = try Self.app(fake)
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c-err", card: "card-err", serial: 74)
        let retried = "DAPLMC0000AA" + String(repeating: "1", count: 36)
        let refused = "DAPLMC0000BB" + String(repeating: "2", count: 36)
        try Self.insertToken(app, reference: retried, card: "card-err")
        try Self.insertToken(app, reference: refused, card: "card-err")
        try fake.plan(
            retried,
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
        try fake.plan(
            refused,
            [
                (
                    400,
                    [
                        [
                            "Source": "TokenUniqueReference", "ReasonCode": "INVALID_TOKEN_STATUS",
                            "ErrorCode": "E0010039", "Description": "Token is not in a status that allows it",
                            "Recoverable": "false",
                        ]
                    ]
                )
            ])

        #expect(try Self.setStatus(app, admin, card: "card-err", "lost") == 200)
        let settled = try Self.waitFor {
            try Self.outbox(app, kind: "mdes_csapi").allSatisfy { $0.status != "pending" }
        }
        #expect(settled)
        let rows = try Dictionary(uniqueKeysWithValues: Self.outbox(app, kind: "mdes_csapi").map { ($0.token, $0) })
        #expect(rows[retried]?.status == "delivered")
        #expect(rows[retried]?.attempts == 2)
        #expect(rows[refused]?.status == "dead")
        #expect(rows[refused]?.attempts == 1)
        #expect(rows[refused]?.lastError?.contains("INVALID_TOKEN_STATUS (E0010039") == true)
        #expect(rows[refused]?.lastError?.contains("recoverable false") == true)

        let seen = try fake.requests()
        #expect(seen.count == 3)
        #expect(seen.allSatisfy { $0["signatureValid"] as? Bool == true })
        #expect(seen.filter { $0.csapiRequest?["TokenUniqueReference"] as? String == retried }.count == 2)

        let recorded = try app.pool.withConnection { connection in
            try connection.query(
                "SELECT token_reference, http_status, reason_code, error_code, source, recoverable, attempt FROM mdes_csapi_errors ORDER BY id"
            ).map {
                (
                    try $0.decode("token_reference", as: String.self), try $0.decode("http_status", as: Int.self),
                    try $0.decode("reason_code", as: String?.self), try $0.decode("error_code", as: String?.self),
                    try $0.decode("source", as: String?.self), try $0.decode("recoverable", as: Bool?.self),
                    try $0.decode("attempt", as: Int.self)
                )
            }
        }
        #expect(recorded.count == 2)
        let retriedError = try #require(recorded.first { $0.0 == retried })
        #expect(retriedError.1 == 503 && retriedError.2 == "SERVICE_UNAVAILABLE" && retriedError.5 == true)
        let refusedError = try #require(recorded.first { $0.0 == refused })
        #expect(refusedError.1 == 400 && refusedError.2 == "INVALID_TOKEN_STATUS" && refusedError.3 == "E0010039")
        #expect(refusedError.4 == "TokenUniqueReference" && refusedError.5 == false && refusedError.6 == 1)
    }

    @Test(
        "The OAuth key in the HSM (ISSUERD_MDES_SIGNING_KEY_LABEL): calls signed in the token verify with its public key"
    )
    func signingKeyInHSM() throws {
        let (token, store) = try HSMKeyTests.initialisedToken()
        try store.token.createRSASigningKey(label: "issuerd-csapi")
        let parts = try store.token.rsaPublicKey(label: "issuerd-csapi")
        let publicKey = try RSA.Signing.PublicKey(modulus: parts.modulus, exponent: parts.exponent)
        let fake = try FakeCustomerServiceAPI(publicKeyPEM: publicKey.pemRepresentation)
        var environment = StepUpFlowTests.fastOutbox.merging(fake.environment) { $1 }
        environment.merge(HSMKeyTests.hsmEnvironment(token)) { $1 }
        environment["ISSUERD_MDES_SIGNING_KEY_LABEL"] = "issuerd-csapi"
        environment["ISSUERD_TAV_SIGNING_KEY"] = ""
        environment["ISSUERD_MASTER_KEY"] = ""
        let app = try TestApplication(
            environment: environment,
            prepare: { database in
                try HSMKeyTests.migrate(database)
                let pool = database.makePool(size: 1)
                defer { pool.close() }
                _ = try HSMDataKeyProvisioning.addGenerated(hsm: store, masterKeys: [], database: pool, actor: "test")
            })
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c-hsm", card: "card-hsm", serial: 76)
        let mastercard = Self.tokenUniqueReference()
        try Self.insertToken(app, reference: mastercard, card: "card-hsm")
        #expect(try Self.setStatus(app, admin, card: "card-hsm", "lost") == 200)
        let seen = try fake.wait { $0.count >= 1 }
        try #require(seen.count == 1)
        Self.expectSignedAndValid(seen[0])
        #expect(seen[0].csapiRequest?["TokenUniqueReference"] as? String == mastercard)
    }

    @Test("Without ISSUERD_MDES_CSAPI_URL nothing is sent: the Mastercard calls stay pending, untried")
    func pendingWithoutURL() throws {
        let app = try Self.app(nil)
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "c-off", card: "card-off", serial: 75)
        let mastercard = Self.tokenUniqueReference()
        try Self.insertToken(app, reference: mastercard, card: "card-off")
        #expect(try Self.setStatus(app, admin, card: "card-off", "lost") == 200)
        Thread.sleep(forTimeInterval: 0.3)  // several dispatcher rounds at 20 ms
        let rows = try Self.outbox(app, kind: "mdes_csapi")
        #expect(rows.count == 1)
        #expect(rows.first?.status == "pending")
        #expect(rows.first?.attempts == 0)
        // The operator's view names the token and the call.
        let view = try app.client.get("/v1/admin/outbox", headers: AdminFixtures.bearer(admin)).jsonObject()
        let counts = view?["counts"] as? [[String: Any]] ?? []
        #expect(counts.contains { $0["kind"] as? String == "mdes_csapi" && $0["status"] as? String == "pending" })
    }
}
