import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Synchronization
import Testing

@testable import IssuerdAPI

/// `POST /v1/cards/{cardId}/apple-pay/provision` and `GET /v1/cards` over HTTP, against a real
/// PostgreSQL and a generated Apple-shaped PKI.
@Suite("In-app provisioning over HTTP")
struct InAppProvisioningTests {
    @Test("A green push decrypts in Python to the card, and the attempt explains itself")
    func greenPushDecrypts() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(
            app, "card-1", customer: "cust-1", pan: DecisionFixtures.mastercardPAN, expiration: "03/29",
            name: "홍길동", network: "mastercard")
        let signature = Array((0..<71).map { UInt8($0 * 3 & 0xFF) })
        let response = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: try DecisionFixtures.provisionBody(app, signature: signature)
        )
        #expect(response.status == 200, "\(response.text)")
        let body = try #require(response.jsonObject())
        let decision = try #require(body["decision"] as? [String: Any])
        #expect(decision["flow"] as? String == "green")
        #expect(body["wrappedKey"] == nil)
        #expect(!(try #require(body["activationData"] as? String)).isEmpty)
        let plaintext = try DecisionFixtures.decrypt(
            app, encryptedPassData: try #require(body["encryptedPassData"] as? String),
            ephemeralPublicKey: try #require(body["ephemeralPublicKey"] as? String))
        #expect(plaintext["primaryAccountNumber"] == DecisionFixtures.mastercardPAN)
        #expect(plaintext["expiration"] == "03/29")
        #expect(plaintext["name"] == "홍길동")
        #expect(plaintext["nonce"] == "9c023092")
        #expect(plaintext["nonceSignature"] == BinaryEncoding.hexString(signature))
        #expect(!response.text.contains(DecisionFixtures.mastercardPAN))

        let attemptID = try #require(decision["attemptId"] as? String)
        let explain = try app.client.get(
            "/v1/admin/attempts/\(attemptID)", headers: ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"])
        #expect(explain.status == 200, "\(explain.text)")
        let attempt = try #require(explain.jsonObject())
        let inputs = try #require(attempt["inputs"] as? [String: Any])
        #expect(inputs["card.status"] as? String == "active")
        #expect(inputs["request.channel"] as? String == "in_app")
        #expect(inputs["device.locale_country"] as? String == "KR")
        #expect(inputs["wallet.device_score"] is NSNull)
        #expect((attempt["rulesetVersion"] as? String)?.hasPrefix("sha256:") == true)
        #expect(attempt["decision"] as? String == "APPROVED")
        let features = try #require(attempt["features"] as? [String: Any])
        #expect(features["attempts(card, 24h)"] as? Int == 0)
        #expect(!explain.text.contains(DecisionFixtures.mastercardPAN))
        #expect(app.application.metrics.value(of: "issuerd_decisions_total", labels: ["in_app", "green"]) == 1)

        // The second push sees the first in its velocity.
        let second = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: try DecisionFixtures.provisionBody(app))
        let secondID = try #require((second.jsonObject()?["decision"] as? [String: Any])?["attemptId"] as? String)
        let secondAttempt = try app.client.get(
            "/v1/admin/attempts/\(secondID)", headers: ["Authorization": "Bearer \(try app.apiKey(role: .admin))"])
        #expect((secondAttempt.jsonObject()?["features"] as? [String: Any])?["attempts(card, 24h)"] as? Int == 1)
    }

    @Test("A migration that reshapes the card table under the running pool: the next push still answers 200")
    func pushAfterMigrationReshapedItsStatement() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let first = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: try DecisionFixtures.provisionBody(app))
        #expect(first.status == 200, "\(first.text)")
        // The push's context statement is now prepared on the pool's connection; a migration from
        // another session changes the type of a column it reads ("cached plan must not change
        // result type" on its next execution).
        try app.pool.withConnection { migration in
            try migration.execute(unsafeSQL: "ALTER TABLE cards ALTER COLUMN country TYPE varchar(2)")
        }
        let second = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: try DecisionFixtures.provisionBody(app))
        #expect(second.status == 200, "\(second.text)")
    }

    @Test("A lost card is orange: 403 with the invariant, and the attempt is stored")
    func lostCardIsOrange() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-lost", customer: "cust-1", status: .lost)
        let response = try DecisionFixtures.provision(
            app, card: "card-lost", customer: "cust-1", body: try DecisionFixtures.provisionBody(app))
        #expect(response.status == 403)
        let error = try #require(response.errorEnvelope())
        #expect(error["code"] as? String == "provisioning_declined")
        #expect(error["flow"] as? String == "orange")
        let reasons = try #require(error["reasons"] as? [[String: Any]])
        #expect(
            reasons.contains {
                $0["rule"] as? String == "invariant.card_unusable" && $0["reason"] as? String == "CARD_NOT_USABLE"
            })
        let attemptID = try #require(error["attemptId"] as? String)
        #expect(
            try DecisionFixtures.count(
                app,
                "SELECT count(*) FROM provisioning_attempts WHERE attempt_id = '\(attemptID)' AND flow = 'orange' AND decision = 'DECLINED'"
            ) == 1)
        #expect(response.jsonObject()?["encryptedPassData"] == nil)
    }

    @Test("Another customer's card and a missing card are both 404 card_not_found")
    func otherCustomersCard() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.customer(app, "cust-2")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        for card in ["card-1", "card-missing"] {
            let response = try DecisionFixtures.provision(
                app, card: card, customer: "cust-2", body: try DecisionFixtures.provisionBody(app))
            #expect(response.status == 404)
            #expect(response.errorEnvelope()?["code"] as? String == "card_not_found")
        }
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 0)
        let list = try app.client.get(
            "/v1/cards", headers: ["Authorization": "Bearer \(try app.appToken(customer: "cust-2"))"])
        #expect(list.status == 200)
        #expect((list.jsonObject()?["cards"] as? [Any])?.isEmpty == true)
    }

    @Test("A missing, expired, forged, 100-year or iat-less app token is 401")
    func appTokenRefused() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let body = try DecisionFixtures.provisionBody(app)
        let expired = try app.appToken(customer: "cust-1", lifetime: 60, now: Date().addingTimeInterval(-3600))
        let forged = try AppTokenVerifier.mintHS256(
            secret: String(repeating: "b", count: 40), customerID: "cust-1", lifetime: 600, now: Date())
        let century = try app.appToken(customer: "cust-1", lifetime: 100 * 365 * 86_400)
        let issued = Int(Date().timeIntervalSince1970)
        let noIssuedAt = try TestJWT.hs256(
            ["sub": "cust-1", "exp": issued + 600], secret: app.appJWTSecret)
        for headers in [
            [:], ["Authorization": "Bearer \(expired)"], ["Authorization": "Bearer \(forged)"],
            ["Authorization": "Bearer not.a.jwt"], ["Authorization": "Bearer \(century)"],
            ["Authorization": "Bearer \(noIssuedAt)"],
        ] {
            let response = try app.client.postJSON("/v1/cards/card-1/apple-pay/provision", body, headers: headers)
            #expect(response.status == 401)
            #expect(response.errorEnvelope()?["code"] as? String == "unauthenticated")
            #expect(try app.client.get("/v1/cards", headers: headers).status == 401)
        }
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 0)
    }

    @Test("The same Idempotency-Key and body replay the answer; another body is 409")
    func idempotency() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let body = try DecisionFixtures.provisionBody(app)
        let first = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-1"])
        let again = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-1"])
        #expect(first.status == 200)
        #expect(again.status == 200)
        #expect(again.body == first.body)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 1)
        let other = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1",
            body: try DecisionFixtures.provisionBody(app, nonce: [1, 2, 3, 4]), headers: ["Idempotency-Key": "k-1"])
        #expect(other.status == 409)
        #expect(other.errorEnvelope()?["code"] as? String == "idempotency_key_reused")
    }

    @Test(
        "The idempotent answer commits in the attempt's own transaction, so a lost acknowledgement replays instead of provisioning twice"
    )
    func idempotentAnswerCommitsWithTheAttempt() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let body = try DecisionFixtures.provisionBody(app)
        let first = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-tx"])
        #expect(first.status == 200)
        // One transaction id on both rows: the answer cannot exist without the attempt or the reverse.
        let together = try DecisionFixtures.count(
            app,
            """
            SELECT count(*) FROM idempotency_keys k, provisioning_attempts a
            WHERE k.key = 'k-tx' AND k.status = 200 AND k.xmin = a.xmin
            """)
        #expect(together == 1)
    }

    @Test(
        "A claim left without an answer (instance killed, database gone) is taken over after its expiry; a fresh one is 409"
    )
    func abandonedClaimIsTakenOver() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let body = try DecisionFixtures.provisionBody(app)
        #expect(
            try DecisionFixtures.provision(
                app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-1"]
            ).status == 200)
        // What a SIGKILL between claim and answer leaves: the claim (status 0) and no attempt.
        try app.pool.withConnection { connection in
            try connection.execute("UPDATE idempotency_keys SET status = 0, response_body = '' WHERE key = 'k-1'")
            try connection.execute("DELETE FROM provisioning_attempts")
        }
        let fresh = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-1"])
        #expect(fresh.status == 409)
        #expect(fresh.text.contains("still being processed"))

        let expiry = Int(IdempotencyStore.claimExpiry.timeInterval) + 1
        try app.pool.withConnection {
            try $0.execute(
                "UPDATE idempotency_keys SET created_at = now() - make_interval(secs => \(expiry)) WHERE key = 'k-1'")
        }
        let retried = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-1"])
        #expect(retried.status == 200)
        #expect(retried.header("Idempotent-Replayed") == nil)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 1)
        let replay = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-1"])
        #expect(replay.header("Idempotent-Replayed") == "true")
        #expect(replay.body == retried.body)
    }

    /// What the late holder does while the retry waits on the row in its takeover.
    enum LateHolder: String, CaseIterable, Sendable {
        /// Stores its answer: the retry replays it.
        case answers
        /// Releases the claim (its work failed): the retry claims the key again and does the work.
        case releases
    }

    @Test(
        "A retry that finds an expired claim answered or released while it takes it over replays or redoes it (not 409)",
        arguments: LateHolder.allCases)
    func expiredClaimChangedDuringTakeover(holderDoes: LateHolder) throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let body = try DecisionFixtures.provisionBody(app)
        let first = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-3"])
        #expect(first.status == 200)
        // A holder slower than the expiry: its claim looks abandoned, its answer is not in yet.
        let expiry = Int(IdempotencyStore.claimExpiry.timeInterval) + 1
        try app.pool.withConnection { connection in
            try connection.execute(
                "UPDATE idempotency_keys SET status = 0, created_at = now() - make_interval(secs => \(expiry)) WHERE key = 'k-3'"
            )
            // A holder that will release its claim did not commit its work.
            if holderDoes == .releases { try connection.execute("DELETE FROM provisioning_attempts") }
        }
        // The late holder's transaction, about to store its answer, holds the row.
        let holder = try PostgresConnection(connectionString: app.database.connectionString)
        let holderPID = try #require(try holder.query("SELECT pg_backend_pid() AS p").first).decode("p", as: Int32.self)
        try holder.execute("BEGIN")
        _ = try holder.query("SELECT key FROM idempotency_keys WHERE key = 'k-3' FOR UPDATE")
        let retry = BackgroundCall {
            try DecisionFixtures.provision(
                app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-3"])
        }
        // The retry read the bare, expired claim and now waits on the row in its takeover
        // (watched from outside the holder's transaction).
        let (waiting, activity) = try app.database.waitUntilBlocked(by: holderPID, within: 120)
        #expect(waiting, "the retry never reached the takeover: \(activity)")
        switch holderDoes {
        case .answers:
            try holder.execute(
                "UPDATE idempotency_keys SET status = 200, response_body = \(first.body) WHERE key = 'k-3'")
        case .releases:
            try holder.execute("DELETE FROM idempotency_keys WHERE key = 'k-3'")
        }
        try holder.execute("COMMIT")
        let response = try #require(retry.result(within: 20), "the retry did not answer").get()
        #expect(response.status == 200, "\(response.text)")
        switch holderDoes {
        case .answers:
            #expect(response.header("Idempotent-Replayed") == "true")
            #expect(response.body == first.body)
            #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 1)
        case .releases:
            #expect(response.header("Idempotent-Replayed") == nil)  // done once, by the retry
            #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 1)
            #expect(
                try DecisionFixtures.count(
                    app, "SELECT count(*) FROM idempotency_keys WHERE key = 'k-3' AND status = 200") == 1)
        }
    }

    @Test("A slow holder whose claim a retry took over neither records its answer nor does its work again")
    func takenOverClaimIsInert() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let body = try DecisionFixtures.provisionBody(app)
        #expect(
            try DecisionFixtures.provision(
                app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-2"]
            ).status == 200)
        let row = try app.pool.withConnection {
            try $0.query("SELECT scope, claim_token FROM idempotency_keys WHERE key = 'k-2'").first
        }
        let scope = try #require(row).decode("scope", as: String.self)
        let winner = try #require(try row?.decode("claim_token", as: UUID.self))
        // The first holder, slower than the expiry, comes back after the retry took over.
        let slow = IdempotencyClaim(scope: scope, key: "k-2", token: UUID.random())
        try app.pool.withConnection { connection in
            #expect(try connection.execute(slow.recording(HTTPResponse(status: 201, body: Array("late".utf8)))) == 0)
            #expect(try connection.execute(slow.releasing()) == 0)
            #expect(try connection.query(slow.holding()).isEmpty)
            // Even on a bare claim (status 0) held by another token, the slow holder finds nothing.
            try connection.execute("UPDATE idempotency_keys SET status = 0 WHERE key = 'k-2'")
            #expect(try connection.query(slow.holding()).isEmpty)
            #expect(
                try connection.query(IdempotencyClaim(scope: scope, key: "k-2", token: winner).holding()).count == 1)
        }
    }

    @Test("The card limit answers 429 with Retry-After, counted in PostgreSQL")
    func rateLimited() throws {
        let app = try TestApplication(environment: [
            "ISSUERD_RATE_LIMIT_CARD": "2/1m", "ISSUERD_RATE_LIMIT_CUSTOMER": "3/1m",
        ])
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        try DecisionFixtures.card(
            app, "card-2", customer: "cust-1", pan: DecisionFixtures.mastercardPAN, network: "mastercard")
        let body = try DecisionFixtures.provisionBody(app)
        let statuses = try (0..<3).map { _ in
            try DecisionFixtures.provision(app, card: "card-1", customer: "cust-1", body: body)
        }
        #expect(statuses.map(\.status) == [200, 200, 429])
        let limited = statuses[2]
        #expect(limited.errorEnvelope()?["code"] as? String == "rate_limited")
        let retry = try #require(limited.header("Retry-After").flatMap(Int.init))
        #expect((1...60).contains(retry))
        // The customer limit (3) counts pushes of every card of the customer.
        #expect(try DecisionFixtures.provision(app, card: "card-2", customer: "cust-1", body: body).status == 200)
        #expect(try DecisionFixtures.provision(app, card: "card-2", customer: "cust-1", body: body).status == 429)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 3)
    }

    /// A rate limit is about when a request came, not what it asked: its 429 is not kept as the
    /// key's answer, so the retry that Retry-After invites, with the same key, does the work.
    @Test("A 429 is not stored under its Idempotency-Key: the same key after the window is decided")
    func rateLimitedKeyIsNotKept() throws {
        let app = try TestApplication(environment: [
            "ISSUERD_RATE_LIMIT_CARD": "1/2s", "ISSUERD_RATE_LIMIT_CUSTOMER": "100/1m",
        ])
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let body = try DecisionFixtures.provisionBody(app)
        let first = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-a"])
        #expect(first.status == 200)
        let limited = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-b"])
        #expect(limited.status == 429)
        let retry = try #require(limited.header("Retry-After").flatMap(Int.init))
        Thread.sleep(forTimeInterval: Double(retry) + 0.5)
        let again = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-b"])
        #expect(again.status == 200, "\(again.status)")
        #expect(again.header("Idempotent-Replayed") == nil)
        // And that answer is kept: the same key now replays it.
        let replayed = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: body, headers: ["Idempotency-Key": "k-b"])
        #expect(replayed.status == 200)
        #expect(replayed.header("Idempotent-Replayed") == "true")
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 2)
    }

    /// Concurrent pushes of one card: the per-customer lock makes the count exact, so exactly
    /// the limit's worth are decided and stored, and every other request is 429.
    @Test("Concurrent pushes never exceed the card limit")
    func rateLimitHoldsUnderConcurrency() throws {
        let app = try TestApplication(environment: [
            "ISSUERD_RATE_LIMIT_CARD": "3/1m", "ISSUERD_RATE_LIMIT_CUSTOMER": "100/1m",
        ])
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let body = try DecisionFixtures.provisionBody(app)
        let statuses = Mutex<[Int]>([])
        let requests = DispatchGroup()
        for _ in 0..<12 {
            requests.enter()
            Thread.detachNewThread {
                defer { requests.leave() }
                let status =
                    (try? DecisionFixtures.provision(app, card: "card-1", customer: "cust-1", body: body).status) ?? -1
                statuses.withLock { $0.append(status) }
            }
        }
        requests.wait()
        let all = statuses.withLock { $0 }
        #expect(all.filter { $0 == 429 }.count == 9, "\(all.sorted())")
        #expect(all.filter { $0 == 200 }.count == 3, "\(all.sorted())")
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 3)
    }

    @Test(
        "Chain problems are 422 certificate_chain_invalid naming the check, attempt stored",
        arguments: ["leaf_only", "garbage", "foreign_root", "rsa_leaf"])
    func chainProblems(_ problem: String) throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let leaf = BinaryEncoding.base64String(app.pki.eccLeaf.certificateDER)
        let intermediate = BinaryEncoding.base64String(app.pki.intermediate.certificateDER)
        let certificates: [String]
        let expected: String
        switch problem {
        case "leaf_only": (certificates, expected) = ([leaf], "missing_intermediate")
        case "garbage": (certificates, expected) = (["not!base64", intermediate], "malformed_der")
        case "rsa_leaf":
            (certificates, expected) = (
                [BinaryEncoding.base64String(app.pki.rsaLeaf.certificateDER), intermediate], "leaf_key_type"
            )
        default:
            let other = try DevelopmentPKI.generate()
            (certificates, expected) = (
                [
                    BinaryEncoding.base64String(other.eccLeaf.certificateDER),
                    BinaryEncoding.base64String(other.intermediate.certificateDER),
                ], "untrusted_root"
            )
        }
        let response = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1",
            body: try DecisionFixtures.provisionBody(app, certificates: certificates))
        #expect(response.status == 422, "\(response.text)")
        let error = try #require(response.errorEnvelope())
        #expect(error["code"] as? String == "certificate_chain_invalid")
        #expect(error["detail"] as? String == expected)
        let attemptID = try #require(error["attemptId"] as? String)
        #expect(
            try DecisionFixtures.count(
                app,
                "SELECT count(*) FROM provisioning_attempts WHERE attempt_id = '\(attemptID)' AND decision = 'CERTIFICATE_CHAIN_INVALID' AND facts->'chainFailure'->>'code' = '\(expected)'"
            ) == 1)
    }

    @Test("Bad bodies are 4xx before any attempt: scheme off, bad nonce, too many certificates, bad channel")
    func badBodies() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let cases: [(String, Int, String)] = [
            (
                try DecisionFixtures.provisionBody(app, extra: ["encryptionScheme": "RSA_V2"]), 422,
                "encryption_scheme_unsupported"
            ),
            (try DecisionFixtures.provisionBody(app, extra: ["encryptionScheme": "AES"]), 400, "invalid_request"),
            (try DecisionFixtures.provisionBody(app, extra: ["nonce": "%%%"]), 400, "invalid_request"),
            (
                try DecisionFixtures.provisionBody(app, extra: ["nonce": String(repeating: "A", count: 5000)]), 400,
                "invalid_request"
            ),
            (try DecisionFixtures.provisionBody(app, certificates: ["AA", "AA", "AA", "AA"]), 400, "invalid_request"),
            (
                try DecisionFixtures.provisionBody(app, certificates: [String(repeating: "A", count: 9000)]), 400,
                "invalid_request"
            ),
            (try DecisionFixtures.provisionBody(app, extra: ["channel": "tsp"]), 400, "invalid_request"),
            (try DecisionFixtures.provisionBody(app, extra: ["device": ["type": "toaster"]]), 400, "invalid_request"),
            ("{\"certificates\": 5}", 400, "malformed_json"),
            ("[]", 400, "malformed_json"),
        ]
        for (body, status, code) in cases {
            let response = try DecisionFixtures.provision(app, card: "card-1", customer: "cust-1", body: body)
            #expect(response.status == status, "\(body.prefix(80)): \(response.text)")
            #expect(response.errorEnvelope()?["code"] as? String == code)
        }
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 0)
    }

    @Test("GET /v1/cards: the caller's cards, eligibility and a default description")
    func cardsList() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "a-active", customer: "cust-1", description: "My card")
        try DecisionFixtures.card(
            app, "b-lost", customer: "cust-1", pan: DecisionFixtures.mastercardPAN, network: "mastercard", status: .lost
        )
        try DecisionFixtures.card(app, "c-expired", customer: "cust-1", pan: "4000056655665556", expiration: "01/20")
        let response = try app.client.get(
            "/v1/cards", headers: ["Authorization": "Bearer \(try app.appToken(customer: "cust-1"))"])
        #expect(response.status == 200)
        let cards = try #require(response.jsonObject()?["cards"] as? [[String: Any]])
        let byID = Dictionary(
            uniqueKeysWithValues: cards.compactMap { card in (card["cardId"] as? String).map { ($0, card) } })
        #expect(byID["a-active"]?["walletEligible"] as? Bool == true)
        #expect(byID["a-active"]?["localizedDescription"] as? String == "My card")
        #expect(byID["a-active"]?["primaryAccountSuffix"] as? String == "1111")
        #expect(byID["b-lost"]?["walletEligible"] as? Bool == false)
        #expect(byID["b-lost"]?["localizedDescription"] as? String == "Mastercard •••• 9999")
        #expect(byID["c-expired"]?["walletEligible"] as? Bool == false)
        #expect(!response.text.contains(DecisionFixtures.visaPAN))
    }
}
