import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The two-round-trip TSP authorization against the path it replaced
/// (``SequentialTokenizationReference``), and the guarantees it folds into its transaction: the
/// signature's replay record, the `Idempotency-Key` claim's lock and answer.
@Suite("TSP authorization in two round trips: the old path's answers and rows, replay and claim guarantees")
struct TokenizationEquivalenceTests {
    /// A clock both applications read, moved by the test between requests.
    final class SettableClock: Sendable {
        private let value: Lock<Date>
        init(_ date: Date) { value = Lock(date) }
        func set(_ date: Date) { value.withLock { $0 = date } }
        var now: Date { value.withLock { $0 } }
    }

    /// The same customers and cards, created at fixed times, in both applications' databases.
    private static func seed(_ app: TestApplication, base: Date) throws {
        let day: TimeInterval = 86_400
        try app.pool.withConnection { connection in
            for (id, phone, email) in [
                ("cust-1", "01012345678", "hong.gildong@example.com"), ("cust-2", nil, "kim@example.com"),
            ] as [(String, String?, String?)] {
                let created = base.addingTimeInterval(-400 * day)
                _ = try CustomerStore.upsert(
                    CustomerRecord(customerID: id, phoneNumber: phone, email: email, createdAt: created), now: created,
                    connection: connection)
            }
            for (card, customer, pan, network) in [
                ("card-1", "cust-1", DecisionFixtures.visaPAN, "visa"),
                ("card-2", "cust-1", DecisionFixtures.mastercardPAN, "mastercard"),
                ("card-3", "cust-2", "4000056655665556", "visa"),
            ] {
                _ = try CardStore.insert(
                    cardID: card, customerID: customer, pan: try #require(PrimaryAccountNumber(pan)),
                    expiration: try #require(CardExpiration("12/30")),
                    cardholderName: "HONG GILDONG", paymentNetwork: network, status: .active, localizedDescription: nil,
                    country: "KR",
                    now: base.addingTimeInterval(-200 * day), vault: app.application.context.vault,
                    connection: connection)
            }
        }
    }

    /// The repository's policy (its velocity rules ask for card, device and customer history)
    /// plus ``DecisionFixtures/pushStepUpRules()``'s rule making an in-app push to a watch yellow.
    private static func defaultPolicyWithWatchPushes() throws -> String {
        let directory = TestScratch.path("issuerd-rules")
        try FileManager.default.copyItem(
            at: TestApplication.repositoryRoot.appendingPathComponent("rules"), to: directory)
        let watch = URL(fileURLWithPath: try DecisionFixtures.pushStepUpRules()).appendingPathComponent("test.rules")
        try FileManager.default.copyItem(at: watch, to: directory.appendingPathComponent("policy/test.rules"))
        return directory.path
    }

    /// Every UUID (attempt ids, push attempt ids) replaced: they are random on each side.
    private static func normalized(_ text: String) -> String {
        text.replacingOccurrences(
            of: "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", with: "<uuid>",
            options: .regularExpression)
    }

    /// What a TSP authorization writes, as normalised JSON text per table (the attempt's
    /// `inputs` without the request checks it records for replays, which the old path did not:
    /// ``ReplayDecisionTests`` holds those to the stored decisions).
    private static func written(_ app: TestApplication) throws -> [String: String] {
        let tables = [
            "attempts": """
            SELECT channel, card_id, customer_id, device_id, cardholder_name_hash, token_reference, token_requestor_id,
                   tokenization_source, request_id, inputs::jsonb - 'checks' AS inputs, features::jsonb AS features, hits, unknowns::jsonb AS unknowns,
                   flow, decision, allowed_methods, ruleset_version, facts::jsonb AS facts, created_at
            FROM provisioning_attempts WHERE channel = 'tsp' ORDER BY created_at, request_id, token_reference
            """,
            "tokens":
                "SELECT token_reference, card_id, device_id, token_requestor_id, status, created_at, updated_at FROM tokens ORDER BY token_reference",
            "events": "SELECT token_reference, card_id, event, source, at, recorded_at FROM token_events ORDER BY id",
            "audit": "SELECT at_ms, actor, action, subject, details FROM audit_log ORDER BY id",
        ]
        var result: [String: String] = [:]
        try app.pool.withConnection { connection in
            for (name, sql) in tables {
                let text = try connection.query(
                    .init(unsafeSQL: "SELECT coalesce(json_agg(x), '[]')::text AS rows FROM (\(sql)) x")
                ).first?
                .decode("rows", as: String.self)
                result[name] = normalized(text ?? "")
            }
        }
        return result
    }

    @Test("The same requests get the same answers and write the same rows as the old path")
    func sameAnswersAndRows() throws {
        let base = Date(timeIntervalSince1970: (Date().timeIntervalSince1970).rounded(.down))
        let clock = SettableClock(base)
        let rules = try Self.defaultPolicyWithWatchPushes()
        let fresh = try TestApplication(rulesDirectory: rules, clock: { clock.now })
        let old = try TestApplication(rulesDirectory: rules, clock: { clock.now })
        try Self.seed(fresh, base: base)
        try Self.seed(old, base: base)
        let reference = SequentialTokenizationReference(context: old.application.context)

        func noDevice(_ body: String) -> String {
            body.replacingOccurrences(
                of: #""device":{"id":"device-1","type":"phone","name":"iPhone","locale":"ko_KR"},"#, with: "")
        }
        func push(card: String, customer: String, device: String) throws {
            for app in [fresh, old] {
                let response = try DecisionFixtures.provision(
                    app, card: card, customer: customer,
                    body: try DecisionFixtures.provisionBody(app, extra: ["device": ["id": device, "type": "watch"]]))
                #expect(response.status == 200, "\(response.text)")
            }
        }
        let steps: [(String, () throws -> String?)] = [
            ("green", { DecisionFixtures.authorizeBody(requestID: "r-1", tokenReference: "T-1") }),
            (
                "retry of the pair: the stored answer",
                { DecisionFixtures.authorizeBody(requestID: "r-1", tokenReference: "T-1") }
            ),
            (
                "token reference of another request: 409",
                { DecisionFixtures.authorizeBody(requestID: "r-2", tokenReference: "T-1") }
            ),
            (
                "unknown card",
                { DecisionFixtures.authorizeBody(requestID: "r-3", tokenReference: "T-3", pan: "4242424242424242") }
            ),
            (
                "expiry mismatch",
                { DecisionFixtures.authorizeBody(requestID: "r-4", tokenReference: "T-4", expiration: "11/30") }
            ),
            (
                "wallet declined: orange, no token",
                { DecisionFixtures.authorizeBody(requestID: "r-5", tokenReference: "T-5", recommendation: "DECLINED") }
            ),
            (
                "retry of an orange answer",
                { DecisionFixtures.authorizeBody(requestID: "r-5", tokenReference: "T-5", recommendation: "DECLINED") }
            ),
            (
                "after an orange answer, its token reference for another request",
                { DecisionFixtures.authorizeBody(requestID: "r-6", tokenReference: "T-5") }
            ),
            (
                "second card, velocity of the first",
                {
                    DecisionFixtures.authorizeBody(
                        requestID: "r-7", tokenReference: "T-7", pan: DecisionFixtures.mastercardPAN,
                        deviceID: "device-2")
                }
            ),
            ("no device", { noDevice(DecisionFixtures.authorizeBody(requestID: "r-8", tokenReference: "T-8")) }),
            (
                "a yellow push on a watch",
                {
                    try push(card: "card-1", customer: "cust-1", device: "watch-1")
                    return nil
                }
            ),
            (
                "the push's card on another device: green",
                { DecisionFixtures.authorizeBody(requestID: "r-9", tokenReference: "T-9", deviceID: "device-9") }
            ),
            (
                "the push's card and device: yellow, masked methods",
                { DecisionFixtures.authorizeBody(requestID: "r-10", tokenReference: "T-10", deviceID: "watch-1") }
            ),
            (
                "the push answered: green again",
                { DecisionFixtures.authorizeBody(requestID: "r-11", tokenReference: "T-11", deviceID: "watch-1") }
            ),
            (
                "a customer without a phone: yellow, e-mail and app",
                {
                    try push(card: "card-3", customer: "cust-2", device: "watch-3")
                    return DecisionFixtures.authorizeBody(
                        requestID: "r-12", tokenReference: "T-12", pan: "4000056655665556", deviceID: "watch-3")
                }
            ),
            (
                "a push without a device id counts for any device",
                {
                    for app in [fresh, old] {
                        let body = try DecisionFixtures.provisionBody(app, extra: ["device": ["type": "watch"]])
                        #expect(
                            try DecisionFixtures.provision(app, card: "card-2", customer: "cust-1", body: body).status
                                == 200)
                    }
                    return DecisionFixtures.authorizeBody(
                        requestID: "r-13", tokenReference: "T-13", pan: DecisionFixtures.mastercardPAN,
                        deviceID: "device-13")
                }
            ),
        ]
        var answered: [String: Int] = [:]
        for (index, (name, step)) in steps.enumerated() {
            clock.set(base.addingTimeInterval(Double(index)))
            guard let body = try step() else { continue }
            let now = clock.now
            let new = try fresh.client.postJSON(
                "/v1/tsp/tokenization/authorize", body,
                headers: ["X-Issuerd-Signature": try fresh.tspSignature(body, at: now)])
            let request = HTTPRequest(
                method: .post, path: "/v1/tsp/tokenization/authorize", headers: ["Content-Type": "application/json"],
                body: Array(body.utf8))
            let (status, text): (Int, String)
            do {
                let response = try reference.authorize(request, now: now)
                (status, text) = (response.status, String(decoding: response.body, as: UTF8.self))
            } catch let error as HTTPError {
                (status, text) = (error.status, String(decoding: error.response(requestId: "x").body, as: UTF8.self))
            }
            #expect(new.status == status, "\(name): \(new.text) against \(text)")
            if status == 200 {
                #expect(Self.normalized(new.text) == Self.normalized(text), "\(name)")
                let flow = new.jsonObject()?["flow"] as? String ?? "?"
                answered[flow, default: 0] += 1
            } else {
                #expect(new.errorEnvelope()?["code"] as? String != nil)
                #expect(
                    new.errorEnvelope()?["code"] as? String
                        == (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                        .flatMap { ($0["error"] as? [String: Any])?["code"] as? String }, "\(name)")
            }
        }
        // The fixture covers every flow (the policy's velocity rules turn some of them orange).
        #expect(["green", "yellow", "orange"].allSatisfy { answered[$0, default: 0] >= 2 }, "\(answered)")
        let newRows = try Self.written(fresh)
        let oldRows = try Self.written(old)
        // The policy's velocity was asked, by card, device and customer.
        for feature in ["attempts(card, 24h)", "attempts(device, 24h)", "attempts(customer, 7d)"] {
            // inputs and features are json written in no key order: read as jsonb so both paths' rows compare.
            #expect(newRows["attempts"]?.contains("\"\(feature)\": ") == true, "\(feature)")
        }
        for table in ["attempts", "tokens", "events", "audit"] {
            #expect(newRows[table] == oldRows[table], "\(table)")
            #expect((newRows[table] ?? "[]") != "[]", "\(table) is empty")
        }
    }

    @Test("A green answer commits its signature, attempt, token, events and audit entry in one transaction")
    func oneTransaction() throws {
        // No sealer: sealing rewrites the audit row, and so its xmin.
        let app = try TestApplication(environment: ["ISSUERD_AUDIT_SEAL": "false"])
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let response = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody(tokenReference: "TOKEN-TX"))
        #expect(response.status == 200, "\(response.text)")
        let together = try DecisionFixtures.count(
            app,
            """
            SELECT count(*) FROM tsp_signatures_seen s, provisioning_attempts a, tokens t, audit_log l
            WHERE a.channel = 'tsp' AND t.token_reference = 'TOKEN-TX' AND l.subject = 'token:TOKEN-TX'
              AND s.xmin = a.xmin AND t.xmin = a.xmin AND l.xmin = a.xmin
              AND (SELECT count(*) FROM token_events e WHERE e.token_reference = 'TOKEN-TX' AND e.xmin = a.xmin) = 2
            """)
        #expect(together == 1)
    }

    @Test("A replayed signature is 401 whatever the first answer was: 200, 409, or a 400 before any transaction")
    func replayRefusedAfterEveryAnswer() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let green = DecisionFixtures.authorizeBody(requestID: "r-1", tokenReference: "TOKEN-R")
        let taken = DecisionFixtures.authorizeBody(requestID: "r-2", tokenReference: "TOKEN-R")
        let bad =
            #"{"requestId":"r-3","tokenReference":"TOKEN-B","card":{"accountNumber":"4111111111111112","expiration":"12/30"}}"#
        for (body, first) in [(green, 200), (taken, 409), (bad, 400)] {
            let signature = try app.tspSignature(body)
            let answer = try app.client.postJSON(
                "/v1/tsp/tokenization/authorize", body, headers: ["X-Issuerd-Signature": signature])
            #expect(answer.status == first, "\(answer.text)")
            let replay = try app.client.postJSON(
                "/v1/tsp/tokenization/authorize", body, headers: ["X-Issuerd-Signature": signature])
            #expect(replay.status == 401, "after \(first): \(replay.text)")
        }
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM tsp_signatures_seen") == 3)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 1)
    }

    @Test("Copies of one signed request sent at once: one answer, the rest 401, one attempt")
    func concurrentReplays() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let body = DecisionFixtures.authorizeBody(tokenReference: "TOKEN-C")
        let signature = try app.tspSignature(body)
        let statuses = Lock<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            let status =
                (try? app.client.postJSON(
                    "/v1/tsp/tokenization/authorize", body, headers: ["X-Issuerd-Signature": signature]
                ).status) ?? -1
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0.sorted() } == [200, 401, 401, 401, 401, 401])
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 1)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM tokens WHERE token_reference = 'TOKEN-C'") == 1)
    }

    @Test("With an Idempotency-Key the answer commits with the attempt, and a retry signed anew replays it")
    func idempotentAnswerInTheTransaction() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let body = DecisionFixtures.authorizeBody(requestID: "r-k", tokenReference: "TOKEN-K")
        let first = try app.postAsTSP("/v1/tsp/tokenization/authorize", body, headers: ["Idempotency-Key": "k-tsp"])
        #expect(first.status == 200, "\(first.text)")
        let together = try DecisionFixtures.count(
            app,
            """
            SELECT count(*) FROM idempotency_keys k, provisioning_attempts a
            WHERE k.key = 'k-tsp' AND k.status = 200 AND k.xmin = a.xmin AND a.channel = 'tsp'
            """)
        #expect(together == 1)
        let retry = try app.client.postJSON(
            "/v1/tsp/tokenization/authorize", body,
            headers: [
                "X-Issuerd-Signature": try app.tspSignature(body, at: Date().addingTimeInterval(-3)),
                "Idempotency-Key": "k-tsp",
            ])
        #expect(retry.status == 200)
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(retry.body == first.body)
        let other = try app.postAsTSP(
            "/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody(requestID: "r-x"),
            headers: ["Idempotency-Key": "k-tsp"])
        #expect(other.status == 409)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 1)
    }

    @Test("A holder whose claim a retry took over does nothing; a replay that took a claim gives it back")
    func claimTakenOverAndReplayReleasesClaim() throws {
        let app = try TestApplication()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(app, "card-1", customer: "cust-1")
        let context = app.application.context
        let authorization = TokenizationAuthorization(context: context, risk: RiskService(context: context))
        let body = DecisionFixtures.authorizeBody(tokenReference: "TOKEN-S")
        let request = HTTPRequest(
            method: .post, path: "/v1/tsp/tokenization/authorize", headers: ["Content-Type": "application/json"],
            body: Array(body.utf8))
        let winner = UUID.random()
        try app.pool.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO idempotency_keys (scope, key, request_hash, status, claim_token)
                VALUES ('tsp:authorize', 'k-slow', '\\x00', 0, \(winner)), ('tsp:authorize', 'k-replay', '\\x00', 0, \(winner))
                """)
        }

        // The slow holder: its token is no longer the claim's.
        let slow = IdempotencyClaim(scope: "tsp:authorize", key: "k-slow", token: UUID.random())
        let fresh = VerifiedTSPSignature(fingerprint: "fresh-signature")
        do {
            _ = try authorization.authorize(request, now: Date(), signature: fresh, claim: slow)
            Issue.record("a holder whose claim was taken over was answered")
        } catch let error as HTTPError {
            #expect(error.status == 409)
            #expect(error.code.rawValue == IdempotencyStore.keyReusedCode)
        }
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 0)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM tokens") == 0)
        // Its signature was recorded with the refusal, as it was recorded before any work.
        #expect(
            try DecisionFixtures.count(
                app, "SELECT count(*) FROM tsp_signatures_seen WHERE signature = 'fresh-signature'") == 1)
        #expect(fresh.isDecided)

        // A replay (its signature seen) that holds a claim: 401, nothing done, the claim gone.
        try app.pool.withConnection {
            try $0.execute("INSERT INTO tsp_signatures_seen (signature) VALUES ('seen-signature')")
        }
        let replay = IdempotencyClaim(scope: "tsp:authorize", key: "k-replay", token: winner)
        do {
            _ = try authorization.authorize(
                request, now: Date(), signature: VerifiedTSPSignature(fingerprint: "seen-signature"), claim: replay)
            Issue.record("a replay was authorized")
        } catch let error as HTTPError {
            #expect(error.status == 401)
        }
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM idempotency_keys WHERE key = 'k-replay'") == 0)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 0)
    }

    @Test(
        "A server-side failure after the signature committed keeps its own answer; a client mistake on a seen signature is 401"
    )
    func committedSignatureWithLostAcknowledgement() throws {
        let app = try TestApplication()
        let database = app.application.context.database
        // The work committed its signature, then the acknowledgement was lost: the guard finds the
        // signature recorded, but it is this request's own, so the answer stays the work's 503.
        let committed = VerifiedTSPSignature(fingerprint: "committed-then-lost")
        #expect(throws: PostgresError.self) {
            try committed.guarding(database: database, logger: .silent) {
                try app.pool.withConnection { try $0.execute(committed.insertion()) }
                throw PostgresError(code: .unavailable, message: "server closed the connection unexpectedly")
            }
        }
        // A 5xx of the work is kept the same way.
        let failed = VerifiedTSPSignature(fingerprint: "committed-then-500")
        do {
            _ = try failed.guarding(database: database, logger: .silent) {
                try app.pool.withConnection { try $0.execute(failed.insertion()) }
                throw HTTPError.internalError(requestId: "r-1")
            }
            Issue.record("expected the work's error")
        } catch let error as HTTPError {
            #expect(error.status == 500)
        }
        // A client mistake (400) carrying a signature already seen is a replay: 401.
        try app.pool.withConnection {
            try $0.execute("INSERT INTO tsp_signatures_seen (signature) VALUES ('seen-before')")
        }
        do {
            _ = try VerifiedTSPSignature(fingerprint: "seen-before").guarding(database: database, logger: .silent) {
                throw HTTPError.malformedJSON("bad body")
            }
            Issue.record("expected a refusal")
        } catch let error as HTTPError {
            #expect(error.status == 401)
        }
        // A first 400 records the signature, so a copy of the same bytes is then 401.
        let first = VerifiedTSPSignature(fingerprint: "first-bad-body")
        do {
            _ = try first.guarding(database: database, logger: .silent) { throw HTTPError.malformedJSON("bad body") }
        } catch let error as HTTPError {
            #expect(error.status == 400)
        }
        #expect(
            try DecisionFixtures.count(
                app, "SELECT count(*) FROM tsp_signatures_seen WHERE signature = 'first-bad-body'") == 1)
    }
}
