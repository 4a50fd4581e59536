import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage
import Testing

@testable import IssuerdAPI

/// The PostgreSQL velocity SQL (grouped per table and key, one filtered aggregate per window)
/// must answer exactly what the in-memory reference answers over the same history (attempts,
/// token deletions and step-up failures of each kind), including
/// events exactly on a window's lower bound (counted) and at the decision time (not counted).
@Suite("Velocity in PostgreSQL agrees with the in-memory reference")
struct PostgresVelocityTests {
    @Test func everyMetricKeyAndWindowMatches() throws {
        let app = try TestApplication()
        let now = Date(timeIntervalSince1970: 1_900_000_000)
        let (events, queries) = try Self.history(app, now: now)
        let reference = InMemoryVelocityProvider(events: events)
        for subject in [
            VelocitySubject(cardID: "card-a1", deviceID: "dev-1", customerID: "cust-a"),
            VelocitySubject(cardID: "card-a2", deviceID: "dev-2", customerID: "cust-a"),
            VelocitySubject(cardID: "card-a2", deviceID: nil, customerID: "cust-b"),
        ] {
            let batch = VelocityBatch(subject: subject, time: now, queries: queries)
            let expected = reference.values(for: batch)
            let actual = try app.pool.withConnection { try PostgresVelocityProvider(connection: $0).values(for: batch) }
            for (index, query) in queries.enumerated() {
                #expect(actual[index] == expected[index], "\(query) for \(subject)")
            }
            // A sanity check on the fixture itself: the answers are not all zero.
            #expect(expected.contains { ($0 ?? 0) > 1 } || subject.customerID == "cust-b")
        }
    }

    /// The TSP context statement finds the card by its PAN fingerprint and takes the card and
    /// customer of its velocity subqueries from the joined row: the same values as the reference
    /// for that card, its owner and the request's device.
    @Test func tspContextStatementMatches() throws {
        let app = try TestApplication()
        let now = Date(timeIntervalSince1970: 1_900_000_000)
        let (events, queries) = try Self.history(app, now: now)
        let reference = InMemoryVelocityProvider(events: events)
        let vault = app.application.context.vault
        for (pan, cardID, deviceID) in [
            (DecisionFixtures.visaPAN, "card-a1", "dev-1"), (DecisionFixtures.mastercardPAN, "card-a2", "dev-2"),
            (DecisionFixtures.mastercardPAN, "card-a2", nil),
        ] as [(String, String, String?)] {
            let statement = TokenizationContext.statement(
                requestID: "r-1", tokenReference: "T-1",
                fingerprint: try vault.fingerprint(try #require(PrimaryAccountNumber(pan))),
                deviceID: deviceID,
                velocity: VelocityBatch(subject: VelocitySubject(deviceID: deviceID), time: now, queries: queries),
                pushesSince: now.addingTimeInterval(-86_400))
            let context = try app.pool.withConnection {
                try TokenizationContext(rows: try $0.query(statement.query), statement: statement)
            }
            #expect(context.card?.cardID == cardID)
            #expect(context.customer?.customerID == "cust-a")
            let expected = reference.values(
                for: VelocityBatch(
                    subject: VelocitySubject(cardID: cardID, deviceID: deviceID, customerID: "cust-a"), time: now,
                    queries: queries))
            #expect(context.velocity.count == queries.count)
            for (index, query) in queries.enumerated() {
                #expect(
                    context.velocity[index] == expected[index], "\(query) for \(cardID) on \(deviceID ?? "no device")")
            }
            #expect(expected.contains { ($0 ?? 0) > 1 })
        }
        // No card with that PAN: one row all the same, with no card.
        let missing = TokenizationContext.statement(
            requestID: "r-1", tokenReference: "T-1",
            fingerprint: try vault.fingerprint(try #require(PrimaryAccountNumber("4000056655665556"))),
            deviceID: "dev-1",
            velocity: VelocityBatch(subject: VelocitySubject(deviceID: "dev-1"), time: now, queries: queries),
            pushesSince: now.addingTimeInterval(-86_400))
        let context = try app.pool.withConnection {
            try TokenizationContext(rows: try $0.query(missing.query), statement: missing)
        }
        #expect(context.card == nil)
        #expect(!context.tokenTaken)
        #expect(context.storedAnswer == nil)
    }

    /// The push context folds its rate-limit counts into the card's and the customer's attempt
    /// subqueries: its velocity values stay the reference's, and each count is what the separate
    /// count it replaced answers (pushes, in-app and Wallet extension but not TSP, from the
    /// window's start on, after the decision time too), for windows narrower than, equal to and
    /// wider than the velocity windows, with and without velocity queries of that key.
    @Test func pushContextFoldsRateLimitCounts() throws {
        let app = try TestApplication()
        let now = Date(timeIntervalSince1970: 1_900_000_000)
        var (events, queries) = try Self.history(app, now: now)
        // A TSP attempt (velocity counts it, a push rate limit does not) and a Wallet-extension push.
        let others: [(channel: String, card: String, secondsAgo: Double)] = [
            ("tsp", "card-a1", 10), ("wallet_extension", "card-a2", 20), ("tsp", "card-a2", -3),
        ]
        for (channel, card, secondsAgo) in others {
            let time = now.addingTimeInterval(-secondsAgo)
            try app.pool.withConnection { connection in
                try connection.execute(
                    """
                    INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, device_id, inputs, features, hits, flow,
                        decision, ruleset_version, created_at)
                    VALUES (\(UUID()), \(channel), \(card), 'cust-a', 'dev-9', '{}', '{}', '[]', 'green', 'APPROVED', 'test', \(time))
                    """)
            }
            events.append(
                VelocityEvent(kind: .attempt, time: time, cardID: card, deviceID: "dev-9", customerID: "cust-a"))
        }
        let reference = InMemoryVelocityProvider(events: events)
        func separateCount(_ column: RateLimitSubject, _ id: String, since: Date) throws -> Int {
            try app.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT count(*) AS n FROM provisioning_attempts
                    WHERE \(unsafeSQL: column.rawValue) = \(id) AND channel IN ('in_app', 'wallet_extension', 'google_pay') AND created_at >= \(since)
                    """
                ).first?.decode("n", as: Int.self) ?? -1
            }
        }
        let deviceOnly = queries.filter { $0.key == .device }
        var nonZero = 0
        let windows: [(customer: TimeInterval, card: TimeInterval)] = [
            (60, 86_400), (3_600, 60), (30 * 86_400, 3_600), (7 * 86_400, 7 * 86_400), (90, 30 * 86_400),
        ]
        for (customerWindow, cardWindow) in windows {
            for (cardID, deviceID) in [("card-a1", "dev-1"), ("card-a2", nil)] as [(String, String?)] {
                for asked in [queries, deviceOnly, []] {
                    let batch = VelocityBatch(
                        subject: VelocitySubject(cardID: cardID, deviceID: deviceID, customerID: "cust-a"), time: now,
                        queries: asked)
                    let statement = PushContext.statement(
                        cardID: cardID, customerID: "cust-a", velocity: batch, customerWindow: customerWindow,
                        cardWindow: cardWindow, now: now)
                    let context = try #require(
                        try app.pool.withConnection {
                            try PushContext(rows: try $0.query(statement.query), statement: statement)
                        })
                    let label = "\(cardID), windows \(customerWindow)/\(cardWindow) s, \(asked.count) queries"
                    #expect(context.velocity == reference.values(for: batch), "\(label)")
                    let customer = try separateCount(
                        .customer, "cust-a", since: now.addingTimeInterval(-customerWindow))
                    let card = try separateCount(.card, cardID, since: now.addingTimeInterval(-cardWindow))
                    #expect(context.customerRecent == customer, "customer count, \(label)")
                    #expect(context.cardRecent == card, "card count, \(label)")
                    nonZero += (customer > 0 ? 1 : 0) + (card > 0 ? 1 : 0)
                }
            }
        }
        #expect(nonZero > 20)  // the fixture has pushes in most windows
    }

    /// Two cards of one customer with attempts, token deletions and step-up failures around the
    /// windows' bounds; every metric, key and window as queries.
    private static func history(
        _ app: TestApplication, now: Date
    ) throws -> (events: [VelocityEvent], queries: [VelocityQuery]) {
        try DecisionFixtures.customer(app, "cust-a")
        try DecisionFixtures.customer(app, "cust-b")
        try DecisionFixtures.card(app, "card-a1", customer: "cust-a")
        try DecisionFixtures.card(
            app, "card-a2", customer: "cust-a", pan: DecisionFixtures.mastercardPAN, network: "mastercard")

        // Attempts at offsets (seconds before `now`) chosen to straddle the 1 h, 1 d and 7 d
        // windows, with their exact boundaries; names differ in case and spacing only sometimes.
        let attempts: [(card: String, device: String, customer: String, name: String, secondsAgo: Double)] = [
            ("card-a1", "dev-1", "cust-a", "HONG GILDONG", 0),  // at the decision time: never counted
            ("card-a1", "dev-1", "cust-a", "hong  gildong", 60),
            ("card-a2", "dev-1", "cust-a", "KIM CHULSOO", 3_600),  // exactly on the 1 h bound: counted
            ("card-a2", "dev-2", "cust-a", "KIM CHULSOO", 3_601),
            ("card-a1", "dev-1", "cust-a", "LEE YOUNGHEE", 86_399),
            ("card-a1", "dev-2", "cust-a", "HONG GILDONG", 86_400),
            ("card-a2", "dev-1", "cust-a", "PARK", 6 * 86_400),
            ("card-a1", "dev-1", "cust-a", "CHOI", 8 * 86_400),  // outside every window
            ("card-a1", "dev-1", "cust-a", "HONG GILDONG", -5),  // after the decision time
        ]
        var events: [VelocityEvent] = []
        try app.pool.withConnection { connection in
            for attempt in attempts {
                let time = now.addingTimeInterval(-attempt.secondsAgo)
                // stands in for the HMAC
                let hash = attempt.name.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ")
                try connection.execute(
                    """
                    INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, device_id, cardholder_name_hash,
                        inputs, features, hits, flow, decision, ruleset_version, created_at)
                    VALUES (\(UUID()), 'in_app', \(attempt.card), \(attempt.customer), \(attempt.device), \(hash),
                        '{}', '{}', '[]', 'green', 'APPROVED', 'test', \(time))
                    """)
                events.append(
                    VelocityEvent(
                        kind: .attempt, time: time, cardID: attempt.card, deviceID: attempt.device,
                        customerID: attempt.customer,
                        cardholderName: attempt.name))
            }
            // Token deletions of card-a1 (by card, and by customer through cards).
            for secondsAgo in [10.0, 3_600, 90_000] {
                let time = now.addingTimeInterval(-secondsAgo)
                try connection.execute(
                    """
                    INSERT INTO token_events (token_reference, card_id, event, source, at)
                    VALUES ('DNITHE-\(unsafeSQL: String(Int(secondsAgo)))', 'card-a1', 'deleted', 'tsp', \(time))
                    """)
                events.append(VelocityEvent(kind: .tokenDeletion, time: time, cardID: "card-a1", customerID: "cust-a"))
            }
            // Step-up failures of card-a1: wrong codes (failed_otps), locked and expired
            // challenges (failed_stepups), each kind inside and outside the shorter windows.
            let challenge = UUID()
            try connection.execute(
                """
                INSERT INTO tokens (token_reference, card_id, status) VALUES ('DNITHE-STEPUP', 'card-a1', 'pending_verification');
                """)
            try connection.execute(
                """
                INSERT INTO challenges (challenge_id, token_reference, card_id, customer_id, method, destination_masked, key_version,
                    status, max_attempts, expires_at)
                VALUES (\(challenge), 'DNITHE-STEPUP', 'card-a1', 'cust-a', 'sms', '***-5678', 1, 'locked', 3, \(now))
                """)
            for (kind, secondsAgo) in [
                ("wrong_code", 30.0), ("wrong_code", 7_200), ("locked", 600), ("expired", 172_800),
                ("wrong_code", 3_600),
            ] {
                let time = now.addingTimeInterval(-secondsAgo)
                try connection.execute(
                    """
                    INSERT INTO challenge_failures (challenge_id, card_id, customer_id, kind, at)
                    VALUES (\(challenge), 'card-a1', 'cust-a', \(kind), \(time))
                    """)
                events.append(
                    VelocityEvent(
                        kind: kind == "wrong_code" ? .otpFailure : .stepUpFailure, time: time, cardID: "card-a1",
                        customerID: "cust-a"))
            }
        }

        var queries: [VelocityQuery] = []
        for metric in VelocityMetric.allCases {
            for key in metric.allowedKeys where !(metric == .tokenDeletions && key == .device) {
                for window in [3_600, 86_400, 7 * 86_400] {
                    queries.append(VelocityQuery(metric: metric, key: key, windowSeconds: window))
                }
            }
        }
        return (events, queries)
    }
}
