import Foundation
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// `HistoryBacktest` takes a velocity value an attempt recorded at decision time (`features`)
/// as it is and counts only the others from history (docs/rules.md, "Backtest input"); it reads
/// rows straight into the replay instead of through JSON Lines. These tests hold both to the
/// replay of `issuerd rules export` (every value counted from history) where the two must agree,
/// and pin down which value wins where they do not.
@Suite("Backtest with the velocity values decisions recorded")
struct BacktestRecordedVelocityTests {
    typealias Seed = BacktestHistoryRestrictionTests

    static func compile(_ text: String) throws -> Ruleset {
        try RulesetCompiler.compile(
            [RulesetFile(path: "candidate.rules", contents: text)], contentHasher: RulesetContent.fnv1a64)
    }

    /// Writes into every attempt of `[since, until)` the features the live system would have
    /// recorded deciding it with `ruleset`: its velocity values at the attempt's time, read by
    /// the serving code (`PostgresVelocityProvider`), keyed by description as `RiskService` does.
    static func record(
        _ ruleset: Ruleset, pool: PostgresPool, since: Date = Seed.since, until: Date = Seed.until
    ) throws {
        try pool.withConnection { connection in
            let rows = try connection.query(
                """
                SELECT attempt_id, created_at, card_id, device_id, customer_id FROM provisioning_attempts
                WHERE created_at >= \(since) AND created_at < \(until)
                """)
            for row in rows {
                let id: UUID = try row.decode("attempt_id")
                let batch = VelocityBatch(
                    subject: VelocitySubject(
                        cardID: try row.decode("card_id"), deviceID: try row.decode("device_id"),
                        customerID: try row.decode("customer_id")),
                    time: try row.decode("created_at"), queries: ruleset.velocityQueries)
                let values = try PostgresVelocityProvider(connection: connection).values(for: batch)
                let members = zip(batch.queries, values).map { query, value in
                    "\(HistoryExport.quote(query.description)):\(value.map(String.init) ?? "null")"
                }
                try connection.execute(
                    "UPDATE provisioning_attempts SET features = \(PostgresJSON(rawJSON: "{" + members.joined(separator: ",") + "}")) WHERE attempt_id = \(id)"
                )
            }
        }
    }

    /// The report of a replay of the full `issuerd rules export` of the window.
    static func exportReplay(current: Ruleset, candidate: Ruleset, pool: PostgresPool) throws -> Backtest.Report {
        let export = HistoryExport(
            since: Seed.since, until: Seed.until, lookbackSeconds: HistoryExport.lookback(for: [current, candidate]))
        return Backtest.run(
            current: current, candidate: candidate,
            log: try AttemptLog(jsonLines: Seed.lines(export, pool: pool).joined(separator: "\n")))
    }

    static func report(
        current: Ruleset, candidate: Ruleset, recorded: Bool = true, pool: PostgresPool
    ) throws -> Backtest.Report {
        let outcome = try HistoryBacktest.run(
            current: current, candidate: candidate, since: Seed.since, until: Seed.until, limit: 100,
            useRecordedVelocity: recorded, database: pool)
        guard case .report(let report, _) = outcome else { throw TestFailure("unexpected \(outcome)") }
        return report
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func expectSame(
        _ a: Backtest.Report, _ b: Backtest.Report, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        #expect(a.attempts == b.attempts, sourceLocation: sourceLocation)
        #expect(a.currentHits == b.currentHits, sourceLocation: sourceLocation)
        #expect(a.candidateHits == b.candidateHits, sourceLocation: sourceLocation)
        #expect(a.currentMix == b.currentMix, sourceLocation: sourceLocation)
        #expect(a.candidateMix == b.candidateMix, sourceLocation: sourceLocation)
        #expect(a.transitions == b.transitions, sourceLocation: sourceLocation)
        #expect(a.changed == b.changed, sourceLocation: sourceLocation)
        #expect(a.currentUnresolved == b.currentUnresolved, sourceLocation: sourceLocation)
        #expect(a.candidateUnresolved == b.candidateUnresolved, sourceLocation: sourceLocation)
        #expect(
            a.sample.map { "\($0.attemptID) \($0.before.flow) \($0.after.flow) \($0.after.hits.map(\.ruleID))" }
                == b.sample.map { "\($0.attemptID) \($0.before.flow) \($0.after.flow) \($0.after.hits.map(\.ruleID))" },
            sourceLocation: sourceLocation)
    }

    static func hits(_ report: Backtest.Report) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: report.candidateHits.map { ($0.ruleID, $0.hits) })
    }

    @Test("Values recorded by the serving code give the report of the export's replay, with shared and new windows")
    func recordedAgreesWithHistory() throws {
        let app = try TestApplication()
        try Seed.seed(app.pool)
        let current = app.application.context.rules.current
        // The window attempts recorded what the candidate reads, except attempts(card, 1h) (a
        // window the candidate adds): that one is counted from history. So is
        // token_deletions(customer, 24h): the serving code counts a deletion for a customer only
        // through the deletion's own card id, the export also through its token's card (tok2 and
        // tok4 here), so the two differ on this seed and a recorded value would win.
        let candidate = try Self.compile(Seed.candidate)
        let recordedRules = try #require(Seed.candidate.components(separatedBy: "rule t.customer_deletions").first)
        try Self.record(try Self.compile(recordedRules), pool: app.pool)
        let stored = try app.pool.withConnection {
            try $0.query("SELECT features::text AS f FROM provisioning_attempts WHERE features::jsonb <> '{}'")
        }
        #expect(stored.count == 4)
        #expect(try stored.allSatisfy { try !($0.decode("f", as: String.self)).contains("attempts(card, 1h)") })
        #expect(
            try stored.allSatisfy { try ($0.decode("f", as: String.self)).contains("token_deletions(device, 24h)") })

        let recorded = try Self.report(current: current, candidate: candidate, pool: app.pool)
        let counted = try Self.report(current: current, candidate: candidate, recorded: false, pool: app.pool)
        let export = try Self.exportReplay(current: current, candidate: candidate, pool: app.pool)
        Self.expectSame(recorded, export)
        Self.expectSame(counted, export)
        #expect(recorded.attempts == 4)
        // Not vacuous: every velocity rule fires on history reached through each key, the new
        // window on the window's own earlier attempts of c1 (three before 10:02).
        let hits = Self.hits(recorded)
        for rule in [
            "t.device_attempts", "t.device_cards", "t.device_names", "t.customer_cards", "t.customer_otps",
            "t.card_stepups",
            "t.device_deletions", "t.customer_deletions", "t.card_burst",
        ] {
            #expect((hits[rule] ?? 0) >= 1, "\(rule) never hit: \(hits)")
        }
    }

    @Test("A recorded value wins over history; a null, absent or fractional one is counted from history")
    func recordedValueWins() throws {
        let app = try TestApplication()
        try Seed.seed(app.pool)
        let current = app.application.context.rules.current
        let candidate = try Self.compile(
            RulesTestData.rule("t.card_day", outcome: "orange", when: "attempts(card, 24h) >= 5"))
        // History gives c1's window attempts 1, 2 and 3 earlier attempts of the card in 24 h.
        let windowAttempts = try app.pool.withConnection { connection in
            try connection.query(
                "SELECT attempt_id FROM provisioning_attempts WHERE created_at >= \(Seed.since) AND created_at < \(Seed.until) AND card_id = 'c1' ORDER BY created_at"
            ).map { try $0.decode("attempt_id", as: UUID.self) }
        }
        #expect(windowAttempts.count == 3)
        // 5 reaches the candidate's threshold and not the default policy's velocity.card_burst (6).
        let features = [
            #"{"attempts(card, 24h)": 5}"#, #"{"attempts(card, 24h)": null}"#,
            #"{"attempts(card, 24h)": 5.5, "attempts(card, 1h)": 9}"#,
        ]
        try app.pool.withConnection { connection in
            for (id, json) in zip(windowAttempts, features) {
                try connection.execute(
                    "UPDATE provisioning_attempts SET features = \(PostgresJSON(rawJSON: json)) WHERE attempt_id = \(id)"
                )
            }
        }
        let recorded = try Self.report(current: current, candidate: candidate, pool: app.pool)
        let counted = try Self.report(current: current, candidate: candidate, recorded: false, pool: app.pool)
        // Only the attempt that recorded 5 reaches 5; history never does (at most 3).
        #expect(Self.hits(recorded)["t.card_day"] == 1)
        #expect(Self.hits(counted)["t.card_day"] == 0)
        #expect(recorded.candidateMix[.orange, default: 0] == counted.candidateMix[.orange, default: 0] + 1)
        let first = windowAttempts[0].uuidString.lowercased()
        #expect(
            recorded.sample.contains { $0.attemptID == first && $0.after.hits.contains { $0.ruleID == "t.card_day" } })
        #expect(!counted.sample.contains { $0.after.hits.contains { $0.ruleID == "t.card_day" } })
        Self.expectSame(counted, try Self.exportReplay(current: current, candidate: candidate, pool: app.pool))
    }

    @Test("A candidate window longer than any recorded one reads history from before the window")
    func newLongerWindowReadsHistory() throws {
        let app = try TestApplication()
        try Seed.seed(app.pool)
        let current = app.application.context.rules.current
        try Self.record(current, pool: app.pool)
        // 400 days is longer than the default policy's 180-day look-back: attempts of c1 and
        // of the others sharing u1 from a year ago count only through this window.
        let old = Seed.since.addingTimeInterval(-300 * 86_400)
        for offset in [0.0, 60, 120] {
            _ = try RulesTestData.insertAttempt(
                at: old.addingTimeInterval(offset), card: "c3", device: "d7", customer: "u1",
                inputs: Seed.inputs, pool: app.pool)
        }
        let candidate = try Self.compile(
            RulesTestData.rule("t.customer_year", outcome: "orange", when: "attempts(customer, 400d) >= 6"))
        let recorded = try Self.report(current: current, candidate: candidate, pool: app.pool)
        let export = try Self.exportReplay(current: current, candidate: candidate, pool: app.pool)
        Self.expectSame(recorded, export)
        // u1's window attempts see 3 (a year ago) + 2 (c3 at −700, c1 at −600) + their earlier
        // window attempts: 5, 6, 7, so two of the three reach 6.
        #expect(Self.hits(recorded)["t.customer_year"] == 2)
    }

    @Test("Every attribute type is read from the rows as the JSONL parser reads it; a bad one names the attempt")
    func attributesFromRows() throws {
        let app = try TestApplication()
        try Seed.seed(app.pool)
        let inputs = #"""
            {"attributes": {"card.status": "active", "wallet.recommendation": "approve", "wallet.device_score": 2.5,
             "wallet.reason_codes": ["DEVICE_RECENTLY_LOST", "a \"quoted\", {odd} one", "ACCOUNT_TOO_NEW"], "card.age": 86400,
             "customer.phone_last4_match": false, "device.locale": "fr_FR \u00e9", "wallet.phone_score": null, "not.an.attribute": 1}}
            """#
        _ = try RulesTestData.insertAttempt(
            at: Seed.since.addingTimeInterval(900), card: "c1", device: "d1", customer: "u1", inputs: inputs,
            pool: app.pool)
        let current = app.application.context.rules.current
        let candidate = try Self.compile(
            [
                RulesTestData.rule("t.codes", when: #"has_any(wallet.reason_codes, ["ACCOUNT_TOO_NEW"])"#),
                RulesTestData.rule("t.young", when: "card.age < 2d"),
                RulesTestData.rule("t.score", when: "wallet.device_score < 3"),
                RulesTestData.rule("t.phone", when: "customer.phone_last4_match == false"),
                RulesTestData.rule("t.locale", when: #"device.locale == "fr_FR é""#),
                RulesTestData.rule("t.unknown_phone", when: "wallet.phone_score < 3"),
            ].joined())
        let recorded = try Self.report(current: current, candidate: candidate, pool: app.pool)
        Self.expectSame(recorded, try Self.exportReplay(current: current, candidate: candidate, pool: app.pool))
        let hits = Self.hits(recorded)
        for rule in ["t.codes", "t.young", "t.score", "t.phone", "t.locale"] {
            #expect(hits[rule] == 1, "\(rule): \(hits)")
        }
        #expect(recorded.candidateUnresolved >= 1)

        let bad = try RulesTestData.insertAttempt(
            at: Seed.since.addingTimeInterval(950), card: "c1", device: "d1", customer: "u1",
            inputs: #"{"wallet.device_score": "high"}"#, pool: app.pool)
        #expect {
            _ = try Self.report(current: current, candidate: candidate, pool: app.pool)
        } throws: { error in
            guard let error = error as? HistoryBacktest.ExportError else { return false }
            return error.attemptID == bad.uuidString.lowercased()
                && error.description.contains("\"wallet.device_score\" must be a number")
        }
    }
}
