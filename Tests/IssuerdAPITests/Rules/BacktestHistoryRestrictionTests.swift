import Foundation
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The backtest's export reads only the history sharing a card, device or customer id with the
/// window's attempts (``HistoryExport/windowKeysOnly``); these tests hold it to the full export
/// of `issuerd rules export` over history with keys inside and outside the window.
@Suite("Backtest history restricted to the window's keys")
struct BacktestHistoryRestrictionTests {
    static let since = Date(timeIntervalSince1970: 1_740_823_200)  // 2025-03-01T10:00:00Z
    static let until = since.addingTimeInterval(3_600)
    static let inputs = #"{"card.status":"active","wallet.recommendation":"approve","wallet.device_score":4}"#

    /// Window attempts of c1/u1/d1; before the window, rows linked to them by card, by device
    /// only (c2 on d1), by customer only (c3 of u1), and rows linked by none (c2 on d2, c4/u4,
    /// an attempt without ids), for every event kind, token deletions reaching their card
    /// through the token and their customer through the card.
    static func seed(_ pool: PostgresPool) throws {
        try RulesTestData.insertCard("c1", customer: "u1", pool: pool)
        try RulesTestData.insertCard("c2", customer: "u2", pool: pool)
        try RulesTestData.insertCard("c3", customer: "u1", pool: pool)
        try RulesTestData.insertCard("c4", customer: "u4", pool: pool)
        let attempts: [(Double, String?, String?, String?, String?)] = [
            (-900, "c2", "d2", "u2", "h-other"),  // no shared key
            (-800, "c2", "d1", "u2", "h-bob"),  // shares the device
            (-700, "c3", "d3", "u1", "h-jane2"),  // shares the customer
            (-600, "c1", "d1", "u1", "h-jane"),  // shares all
            (-500, "c4", "d4", "u4", nil),  // no shared key
            (-400, nil, nil, nil, nil),  // no key at all
            (0, "c1", "d1", "u1", "h-jane"), (60, "c1", "d1", "u1", "h-jane"), (120, "c1", "d1", "u1", "h-jane"),
            (1_800, "c4", "d4", "u4", nil),  // in the window, replayed
            (7_200, "c1", "d1", "u1", "h-jane"),  // after the window
        ]
        for (offset, card, device, customer, name) in attempts {
            _ = try RulesTestData.insertAttempt(
                at: since.addingTimeInterval(offset), card: card, device: device, customer: customer, nameHash: name,
                inputs: inputs,
                pool: pool)
        }
        try pool.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO tokens (token_reference, card_id, device_id, status)
                VALUES ('tok1', 'c1', 'd1', 'deleted'), ('tok2', 'c2', 'd1', 'deleted'), ('tok3', 'c2', 'd2', 'deleted'),
                       ('tok4', 'c3', 'd3', 'deleted'), ('tok5', 'c4', 'd9', 'deleted')
                """)
            let challenge = UUID()
            try connection.execute(
                """
                INSERT INTO challenges (challenge_id, token_reference, card_id, customer_id, method, destination_masked, key_version,
                                        status, max_attempts, expires_at)
                VALUES (\(challenge), 'tok1', 'c1', 'u1', 'sms', '***-1234', 1, 'locked', 3, \(since))
                """)
            try connection.execute(
                """
                INSERT INTO challenge_failures (challenge_id, card_id, customer_id, kind, at)
                VALUES (\(challenge), 'c1', 'u1', 'wrong_code', \(since.addingTimeInterval(-300))),
                       (\(challenge), 'c3', 'u1', 'wrong_code', \(since.addingTimeInterval(-250))),
                       (\(challenge), 'c2', 'u2', 'wrong_code', \(since.addingTimeInterval(-200))),
                       (\(challenge), 'c2', 'u2', 'locked', \(since.addingTimeInterval(-150))),
                       (\(challenge), 'c1', 'u1', 'expired', \(since.addingTimeInterval(-100))),
                       (\(challenge), 'c4', 'u9', 'locked', \(since.addingTimeInterval(-90))),
                       (\(challenge), 'c9', 'u1', 'wrong_code', \(since.addingTimeInterval(30)))
                """)
            try connection.execute(
                """
                INSERT INTO token_events (token_reference, card_id, event, source, at)
                VALUES ('tok1', 'c1', 'deleted', 'tsp', \(since.addingTimeInterval(-50))),
                       ('tok2', NULL, 'deleted', 'issuer', \(since.addingTimeInterval(-40))),
                       ('tok3', 'c2', 'deleted', 'tsp', \(since.addingTimeInterval(-30))),
                       ('tok4', NULL, 'deleted', 'tsp', \(since.addingTimeInterval(-20))),
                       ('tok5', NULL, 'deleted', 'tsp', \(since.addingTimeInterval(-15))),
                       ('tok3', 'c2', 'created', 'tsp', \(since.addingTimeInterval(-10)))
                """)
        }
    }

    static func lines(_ export: HistoryExport, pool: PostgresPool) throws -> [String] {
        var lines: [String] = []
        try pool.transaction(isolation: .repeatableRead) { connection in
            try export.write(connection: connection) { lines.append($0) }
        }
        return lines
    }

    /// Every metric by every key it allows, over a day.
    static let queries = VelocityMetric.allCases.flatMap { metric in
        metric.allowedKeys.map { VelocityQuery(metric: metric, key: $0, windowSeconds: 86_400) }
    }

    static let candidate = [
        RulesTestData.rule("t.device_attempts", outcome: "orange", when: "attempts(device, 24h) >= 2"),
        RulesTestData.rule("t.device_cards", when: "distinct_cards(device, 24h) >= 2"),
        RulesTestData.rule("t.device_names", when: "distinct_names(device, 24h) >= 2"),
        // After distinct_names in its (attempt, device) group: the names it needs stay read.
        RulesTestData.rule("t.device_recent", when: "attempts(device, 2h) >= 2"),
        RulesTestData.rule("t.customer_cards", outcome: "orange", when: "distinct_cards(customer, 24h) >= 2"),
        RulesTestData.rule("t.customer_otps", when: "failed_otps(customer, 24h) >= 2"),
        RulesTestData.rule("t.card_stepups", when: "failed_stepups(card, 24h) >= 1"),
        RulesTestData.rule("t.device_deletions", outcome: "orange", when: "token_deletions(device, 24h) >= 2"),
        RulesTestData.rule("t.customer_deletions", when: "token_deletions(customer, 24h) >= 2"),
        RulesTestData.rule("t.card_burst", outcome: "orange", when: "attempts(card, 1h) >= 3"),
    ].joined()

    @Test("The restricted export is the full export less the rows no replayed attempt shares a key with")
    func restrictedLines() throws {
        let app = try TestApplication()
        try Self.seed(app.pool)
        let full = try Self.lines(
            HistoryExport(since: Self.since, until: Self.until, lookbackSeconds: 86_400), pool: app.pool)
        let restricted = try Self.lines(
            HistoryExport(since: Self.since, until: Self.until, lookbackSeconds: 86_400, windowKeysOnly: true),
            pool: app.pool)
        // Same order: the restricted lines are a subsequence of the full ones.
        var rest = restricted[...]
        for line in full where line == rest.first { rest.removeFirst() }
        #expect(rest.isEmpty, "not in the full export, or out of order: \(rest)")
        let dropped = full.filter { !restricted.contains($0) }
        // The attempts at −900 (c2/d2/u2) and −400 (no ids), the two failures of c2/u2 and the
        // deletion of tok3 (c2/d2/u2). The attempt at −500, the failure and the deletion of c4 stay:
        // c4 has an attempt in the window.
        #expect(dropped.count == 5, "\(dropped)")
        #expect(
            dropped.allSatisfy {
                !$0.contains(#""c1""#) && !$0.contains(#""d1""#) && !$0.contains(#""u1""#) && !$0.contains(#""c4""#)
            })
        #expect(dropped.filter { $0.contains(#""type":"attempt""#) }.count == 2)
        #expect(restricted.filter { $0.contains(#""replay":false"#) }.count == 4)
        // Every attempt of the window is there, the one sharing no key with the others included.
        #expect(restricted.filter { $0.contains(#""attributes""#) }.count == 4)
    }

    @Test("Every velocity value of every replayed attempt is the same from the restricted export as from the full one")
    func sameVelocity() throws {
        let app = try TestApplication()
        try Self.seed(app.pool)
        let full = try AttemptLog(
            jsonLines: Self.lines(
                HistoryExport(since: Self.since, until: Self.until, lookbackSeconds: 86_400), pool: app.pool
            ).joined(separator: "\n"))
        let restricted = try AttemptLog(
            jsonLines: Self.lines(
                HistoryExport(since: Self.since, until: Self.until, lookbackSeconds: 86_400, windowKeysOnly: true),
                pool: app.pool
            )
            .joined(separator: "\n"))
        #expect(restricted.events.count < full.events.count)
        #expect(restricted.attempts.map(\.id) == full.attempts.map(\.id))
        let fullVelocity = InMemoryVelocityProvider(events: full.events)
        let restrictedVelocity = InMemoryVelocityProvider(events: restricted.events)
        for attempt in full.attempts {
            let batch = VelocityBatch(subject: attempt.subject, time: attempt.time, queries: Self.queries)
            #expect(restrictedVelocity.values(for: batch) == fullVelocity.values(for: batch), "attempt \(attempt.id)")
        }
        // Not trivially equal: the first replayed attempt reads history through each key.
        let first = try #require(full.attempts.first)
        let values = restrictedVelocity.values(
            for: VelocityBatch(subject: first.subject, time: first.time, queries: Self.queries))
        let byQuery = Dictionary(
            uniqueKeysWithValues: zip(Self.queries.map { "\($0.metric.rawValue)(\($0.key.rawValue))" }, values))
        #expect(byQuery["attempts(device)"] == 2)
        #expect(byQuery["distinct_cards(customer)"] == 2)
        #expect(byQuery["distinct_names(device)"] == 2)
        #expect(byQuery["failed_otps(customer)"] == 2)
        #expect(byQuery["failed_stepups(card)"] == 1)
        #expect(byQuery["token_deletions(device)"] == 2)
        #expect(byQuery["token_deletions(customer)"] == 2)
    }

    /// One connection or several in one snapshot (slices of each time range, the last of three empty).
    @Test("HistoryBacktest streaming the window gives the report of a replay of the full export", arguments: [1, 2, 3])
    func sameReport(readers: Int) throws {
        let app = try TestApplication(poolSize: 4)  // up to three readers, one connection left free
        try Self.seed(app.pool)
        let current = app.application.context.rules.current
        let candidate = try RulesetCompiler.compile(
            [RulesetFile(path: "candidate.rules", contents: Self.candidate)],
            contentHasher: RulesetContent.fnv1a64)
        var lines: [String] = []
        let outcome = try HistoryBacktest.run(
            current: current, candidate: candidate, since: Self.since, until: Self.until, limit: 100,
            database: app.pool, readers: readers
        ) { lines.append($0) }
        #expect(
            lines.first == "backtest: reading on \(readers) connection\(readers == 1 ? "" : "s") in one snapshot",
            "\(lines)")
        // The attempt history read for the window's devices through their index (no attempt
        // recorded a value): the attempts at −900…−500 before the window on d1 or d4.
        #expect(
            lines.contains(
                "backtest: 3 attempt history rows by device for values not recorded, before 2025-03-01T10:00:00.000Z (2 ids)"
            ), "\(lines)")
        guard case .report(let restricted, let export) = outcome else {
            Issue.record("unexpected \(outcome)")
            return
        }
        #expect(export.windowKeysOnly)
        let fullExport = HistoryExport(since: Self.since, until: Self.until, lookbackSeconds: export.lookbackSeconds)
        let full = Backtest.run(
            current: current, candidate: candidate,
            log: try AttemptLog(jsonLines: Self.lines(fullExport, pool: app.pool).joined(separator: "\n")))
        #expect(restricted.attempts == 4)
        #expect(restricted.attempts == full.attempts)
        #expect(restricted.currentHits == full.currentHits)
        #expect(restricted.candidateHits == full.candidateHits)
        #expect(restricted.currentMix == full.currentMix)
        #expect(restricted.candidateMix == full.candidateMix)
        #expect(restricted.transitions == full.transitions)
        #expect(restricted.changed == full.changed)
        #expect(restricted.currentUnresolved == full.currentUnresolved)
        #expect(restricted.candidateUnresolved == full.candidateUnresolved)
        #expect(
            restricted.sample.map { "\($0.attemptID) \($0.before.flow) \($0.after.flow)" }
                == full.sample.map { "\($0.attemptID) \($0.before.flow) \($0.after.flow)" })
        // The candidate's velocity rules fire on history reached through each key.
        let hits = Dictionary(uniqueKeysWithValues: restricted.candidateHits.map { ($0.ruleID, $0.hits) })
        for rule in [
            "t.device_attempts", "t.device_cards", "t.device_names", "t.customer_cards", "t.customer_otps",
            "t.card_stepups",
            "t.device_deletions", "t.customer_deletions",
        ] {
            #expect((hits[rule] ?? 0) >= 1, "\(rule) never hit: \(hits)")
        }
    }
}
