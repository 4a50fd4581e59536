import Foundation
import IssuerdConsole
import IssuerdCrypto
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk
import IssuerdTestSupport
import Testing

/// The hourly roll-up gives exactly what counting `provisioning_attempts` gives, whatever part
/// of a period it already covers, and "changed the final flow" means what the page says.
@Suite("Analyst console: hourly roll-up of decisions and rule hits")
struct ConsoleRollupTests {
    /// 2025-06-01T00:00:00Z: the seeded history ends here.
    static let end = Date(timeIntervalSince1970: 1_748_736_000)
    static let count = 600

    /// Attempt `i` is `(count - i) * 61` seconds before ``end``, so every hour holds some.
    /// i % 4 == 0: orange, lone live orange hit `a.orange` (decisive);
    /// i % 4 == 1: orange, live `a.orange` and `b.orange` (neither decisive) plus live yellow `c.yellow`;
    /// i % 4 == 2: yellow, live `c.yellow` (decisive) and shadow orange `s.orange` (would change);
    /// i % 4 == 3: green, shadow orange `s.orange` (would change) — channel by i % 3, network by i % 2.
    private func seed(_ pool: PostgresPool) throws {
        try pool.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, inputs, features, hits, flow, decision, ruleset_version, created_at)
                SELECT md5('rollup' || i)::uuid, (ARRAY['in_app', 'wallet_extension', 'tsp'])[1 + i % 3],
                       jsonb_build_object('card.network', CASE WHEN i % 2 = 0 THEN 'visa' ELSE 'mastercard' END), '{}',
                       CASE i % 4
                         WHEN 0 THEN '[{"rule":"a.orange","outcome":"orange","mode":"live","values":[]}]'
                         WHEN 1 THEN '[{"rule":"a.orange","outcome":"orange","mode":"live"},{"rule":"b.orange","outcome":"orange","mode":"live"},{"rule":"c.yellow","outcome":"yellow","mode":"live"}]'
                         WHEN 2 THEN '[{"rule":"c.yellow","outcome":"yellow","mode":"live"},{"rule":"s.orange","outcome":"orange","mode":"shadow"}]'
                         ELSE '[{"rule":"s.orange","outcome":"orange","mode":"shadow"}]' END::jsonb,
                       (ARRAY['orange', 'orange', 'yellow', 'green'])[1 + i % 4], 'X', 'v1',
                       \(Self.end) - make_interval(secs => (\(Self.count) - i) * 61)
                FROM generate_series(0, \(Self.count - 1)) i
                """)
        }
    }

    /// The repository's `rules/`, as an instance would serve them.
    static func repositoryRules() throws -> Ruleset {
        try RulesetLoader(
            directory: MigratedDatabase.repositoryRoot.appendingPathComponent("rules"),
            contentHasher: { "sha256:" + BinaryEncoding.hexString(SHA256.hash($0)) }
        ).load()
    }

    private func time(_ i: Int) -> Date { Self.end.addingTimeInterval(-Double((Self.count - i) * 61)) }

    private func expected(_ since: Date, _ until: Date, channel: String? = nil, network: String? = nil) -> [String: Int]
    {
        var counts: [String: Int] = [:]
        for i in 0..<Self.count where time(i) >= since && time(i) < until {
            if let channel, ["in_app", "wallet_extension", "tsp"][i % 3] != channel { continue }
            if let network, (i % 2 == 0 ? "visa" : "mastercard") != network { continue }
            counts[["orange", "orange", "yellow", "green"][i % 4], default: 0] += 1
        }
        return counts
    }

    @Test("Decisions match a raw count before, during and after roll-up, for unaligned periods and filters")
    func decisions() throws {
        let app = try MigratedDatabase()
        try seed(app.pool)
        let since = Self.end.addingTimeInterval(-9 * 3600 - 17 * 60)
        let until = Self.end.addingTimeInterval(-3600 - 180)
        let period = ConsoleQueries.Period(since: since, until: until)
        // Before any history, at the middle, and long after: the roll-up covers none, part, all.
        for now in [
            Self.end.addingTimeInterval(-11 * 3600), Self.end.addingTimeInterval(-4 * 3600 - 60),
            Self.end.addingTimeInterval(86_400),
        ] {
            for (channel, network) in [(nil, nil), ("tsp", nil), (nil, "visa"), ("in_app", "mastercard")]
                as [(String?, String?)]
            {
                let view = try ConsoleQueries.decisions(
                    period, channel: channel, network: network, now: now, database: app.pool)
                let want = expected(since, until, channel: channel, network: network)
                #expect(
                    view.totals.green == want["green", default: 0] && view.totals.yellow == want["yellow", default: 0]
                        && view.totals.orange == want["orange", default: 0],
                    "now \(now) \(channel ?? "-") \(network ?? "-")")
                #expect(view.hours.count == 9)
                #expect(view.hours.map { $0.green + $0.yellow + $0.orange }.reduce(0, +) == want.values.reduce(0, +))
            }
        }
        let state = try app.pool.withConnection {
            try $0.query("SELECT history_from, rolled_from, rolled_until FROM console_rollup_state").first!
        }
        let hour = { (date: Date) in
            Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 3600).rounded(.down) * 3600)
        }
        #expect(try state.decode("rolled_until", as: Date.self) == hour(Self.end.addingTimeInterval(86_400 - 300)))
        let history = try state.decode("history_from", as: Date.self)
        #expect(
            try state.decode("rolled_from", as: Date.self) == history,
            "older history filled backwards to where it began")
        #expect(history <= hour(time(0)))
    }

    @Test(
        "Rule hits: live hits that decided the flow, and what shadow rules would have done, same before and after roll-up"
    )
    func ruleHits() throws {
        let app = try MigratedDatabase()
        try seed(app.pool)
        let since = Self.end.addingTimeInterval(-8 * 3600 - 600)
        let until = Self.end
        var hits: [String: Int] = [:]
        var decisive: [String: Int] = [:]
        var would = 0
        for i in 0..<Self.count where time(i) >= since && time(i) < until {
            switch i % 4 {
            case 0:
                hits["a.orange", default: 0] += 1
                decisive["a.orange", default: 0] += 1
            case 1:
                hits["a.orange", default: 0] += 1
                hits["b.orange", default: 0] += 1
                hits["c.yellow", default: 0] += 1
            case 2:
                hits["c.yellow", default: 0] += 1
                decisive["c.yellow", default: 0] += 1
                hits["s.orange", default: 0] += 1
                would += 1
            default:
                hits["s.orange", default: 0] += 1
                would += 1
            }
        }
        let ruleset = try Self.repositoryRules()
        let pool = app.pool
        for now in [Self.end.addingTimeInterval(-5 * 3600), Self.end.addingTimeInterval(7200)] {
            let view = try ConsoleQueries.ruleHits(
                .init(since: since, until: until), ruleset: ruleset, now: now, database: pool)
            let rows = Dictionary(uniqueKeysWithValues: view.rules.map { ($0.id, $0) })
            for (rule, count) in hits {
                #expect(rows[rule]?.hits == count, "\(rule) at \(now)")
                #expect(rows[rule]?.changedFlow == decisive[rule, default: 0], "\(rule) at \(now)")
                #expect(rows[rule]?.series.reduce(0, +) == count)
            }
            #expect(rows["s.orange"]?.mode == "shadow")
            #expect(rows["s.orange"]?.wouldChange == would)
            #expect(
                rows["a.orange"]?.mode == "builtin", "a hit that is not a rule of the serving ruleset is still counted")
            #expect(rows[ruleset.rules[0].id]?.hits == 0, "every serving rule is listed, hit or not")
        }
    }

    @Test("A stored hit naming no rule (a row edited by hand) is left out; the roll-up and the pages still answer")
    func hitWithoutRule() throws {
        let app = try MigratedDatabase()
        try seed(app.pool)
        try app.pool.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, inputs, features, hits, flow, decision, ruleset_version, created_at)
                VALUES (md5('rule-null')::uuid, 'tsp', '{}', '{}',
                        '[{"rule":null,"outcome":"orange","mode":"live"},{"ruleId":null},{"rule":"a.orange","outcome":"orange","mode":"live"}]',
                        'orange', 'X', 'v1', \(Self.end) - interval '3 hours 30 minutes')
                """)
        }
        let since = Self.end.addingTimeInterval(-8 * 3600 - 600)
        let until = Self.end
        var named = 1  // the edited row's named hit
        for i in 0..<Self.count where time(i) >= since && time(i) < until && i % 4 < 2 { named += 1 }
        // Long after the history: every hour is rolled up, so the INSERT into the roll-up ran over the row.
        let view = try ConsoleQueries.ruleHits(
            .init(since: since, until: until), ruleset: try Self.repositoryRules(),
            now: Self.end.addingTimeInterval(7200), database: app.pool)
        #expect(view.rules.first { $0.id == "a.orange" }?.hits == named)
        #expect(!view.rules.contains { $0.id.isEmpty })
        let decisions = try ConsoleQueries.decisions(
            .init(since: since, until: until), channel: "tsp", network: nil, now: Self.end.addingTimeInterval(7200),
            database: app.pool)
        #expect(decisions.totals.orange == expected(since, until, channel: "tsp")["orange", default: 0] + 1)
        // The search lists the row's named rules only, and its named hit still decided the flow.
        let id = try app.pool.withConnection {
            try $0.query("SELECT md5('rule-null')::uuid::text AS id").first!.decode("id", as: String.self)
        }
        var filter = AttemptFilter()
        filter.text = id
        let found = try AttemptList.page(filter, database: app.pool)
        #expect(found.attempts.map(\.rules) == [["a.orange"]])
        let edited = try app.pool.withConnection {
            try $0.query(
                "SELECT decisive FROM (\(unsafeSQL: ConsoleRollup.hitRowsSQL)) h WHERE rule_id = 'a.orange' AND created_at = \(Self.end) - interval '3 hours 30 minutes'"
            )
            .map { try $0.decode("decisive", as: Bool.self) }
        }
        #expect(edited == [true], "a hit naming no rule does not share the flow's outcome with the named one")
    }

    @Test("A period splits into rolled-up whole hours and raw edges")
    func split() {
        let hour = 3600.0
        let base = Date(timeIntervalSince1970: 1000 * hour)
        func at(_ hours: Double) -> Date { base.addingTimeInterval(hours * hour) }
        func split(_ since: Double, _ until: Double, _ from: Double, _ to: Double) -> ConsoleRollup.Split {
            ConsoleRollup.split(since: at(since), until: at(until), coverage: .init(from: at(from), until: at(to)))
        }
        #expect(split(-0.5, 5.5, -10, 3) == .init(rolledFrom: at(0), rolledTo: at(3)))
        #expect(
            split(-0.5, 5.5, 2, 3) == .init(rolledFrom: at(2), rolledTo: at(3)),
            "history not yet filled backwards is read raw")
        let none = split(0, 5, -3, -1)
        #expect(none.rolledFrom == none.rolledTo)
        let later = split(0, 5, 7, 9)
        #expect(later.rolledFrom == later.rolledTo)
        let inside = split(1.0 / 6, 1.0 / 3, -5, 9)
        #expect(inside.rolledFrom == inside.rolledTo && inside.rolledFrom == at(1.0 / 3))
    }
}
