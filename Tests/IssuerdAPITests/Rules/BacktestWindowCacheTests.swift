import Dispatch
import Foundation
import IssuerdCore
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// ``BacktestWindowCache``: a backtest that takes complete hours parsed by an earlier run gives
/// the report of one that reads everything, and sees every row inserted into or changed in a
/// kept hour since.
@Suite("Backtest: parsed hours kept between runs")
struct BacktestWindowCacheTests {
    static let hour = Date(timeIntervalSince1970: 1_740_823_200)  // 2025-03-01T10:00:00Z
    /// 09:30 to 13:30: a partial hour at each end, three complete hours (10, 11, 12).
    static let since = hour.addingTimeInterval(-1_800)
    static let until = hour.addingTimeInterval(3 * 3_600 + 1_800)
    static let later = until.addingTimeInterval(86_400)
    static let inputs = #"{"card.status":"active","wallet.recommendation":"approve","wallet.device_score":4}"#
    static let riskyInputs = #"{"card.status":"active","wallet.recommendation":"approve","wallet.device_score":1}"#

    static let candidateText = [
        RulesTestData.rule("t.burst", outcome: "orange", when: "attempts(card, 72h) >= 2"),
        RulesTestData.rule("t.low_score", when: "wallet.device_score < 3"),
    ].joined()

    /// A candidate with a velocity query the first one does not have.
    static let otherCandidateText = [
        RulesTestData.rule("t.burst48", outcome: "orange", when: "attempts(card, 48h) >= 2"),
        RulesTestData.rule("t.low_score", when: "wallet.device_score < 3"),
    ].joined()

    static func candidate(_ text: String = candidateText) throws -> Ruleset {
        try RulesetCompiler.compile(
            [RulesetFile(path: "candidate.rules", contents: text)], contentHasher: RulesetContent.fnv1a64)
    }

    /// Three attempts in each of the five parts of the window (the burst rule's value recorded
    /// for the second of each), and one before it.
    static func seed(_ pool: PostgresPool, recorded description: String) throws {
        try RulesTestData.insertCard("c1", customer: "u1", pool: pool)
        try RulesTestData.insertCard("c2", customer: "u2", pool: pool)
        _ = try RulesTestData.insertAttempt(
            at: since.addingTimeInterval(-600), card: "c1", device: "d1", customer: "u1", inputs: inputs,
            pool: pool)
        for part in 0..<5 {
            let start = part == 0 ? since : hour.addingTimeInterval(Double(part - 1) * 3_600)
            for index in 0..<3 {
                let card = index == 2 ? "c2" : "c1"
                let features = index == 1 ? #"{"\#(description)": \#(part)}"# : "{}"
                _ = try RulesTestData.insertAttempt(
                    at: start.addingTimeInterval(Double(index) * 300 + 60), card: card, device: "d\(index)",
                    customer: card == "c1" ? "u1" : "u2",
                    inputs: inputs, features: features, pool: pool)
            }
        }
    }

    /// Everything a report says, as one comparable text.
    static func summary(_ outcome: HistoryBacktest.Outcome) -> String {
        guard case .report(let report, _) = outcome else { return "\(outcome)" }
        let mix = { (mix: [Flow: Int]) in mix.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: ",") }
        let transitions = report.transitions.flatMap { before in
            before.value.map { "\(before.key)>\($0.key)=\($0.value)" }
        }.sorted()
        return """
            attempts \(report.attempts) changed \(report.changed) current \(mix(report.currentMix)) candidate \(mix(report.candidateMix)) \
            transitions \(transitions) hits \(report.candidateHits.map { "\($0.ruleID)=\($0.hits)" }) \
            current hits \(report.currentHits.map { "\($0.ruleID)=\($0.hits)" }) \
            unresolved \(report.currentUnresolved)/\(report.candidateUnresolved) \
            sample \(report.sample.map { "\($0.attemptID) \($0.before.flow)>\($0.after.flow)" })
            """
    }

    struct Run {
        var summary: String
        var lines: [String]
    }

    static func run(
        _ app: TestApplication, cache: BacktestWindowCache?, now: Date = later, limit: Int = 100, readers: Int = 2,
        until: Date = until, candidate text: String = candidateText, useRecorded: Bool = true
    ) throws -> Run {
        var lines: [String] = []
        let outcome = try HistoryBacktest.run(
            current: app.application.context.rules.current, candidate: try candidate(text), since: since, until: until,
            limit: limit,
            useRecordedVelocity: useRecorded, database: app.pool, readers: readers, cache: cache, now: now
        ) { lines.append($0) }
        return Run(summary: summary(outcome), lines: lines)
    }

    /// An application over ``seed(_:recorded:)``'s attempts, the burst rule's value recorded.
    static func seededApplication(poolSize: Int = 4) throws -> TestApplication {
        let app = try TestApplication(poolSize: poolSize)
        try seed(app.pool, recorded: try recordedDescription())
        return app
    }

    static func recordedDescription() throws -> String {
        try #require(try candidate().velocityQueries.first).description
    }

    @Test(
        "A second run takes the complete hours from memory and gives the report of a run that reads them all",
        arguments: [1, 2])
    func sameReport(readers: Int) throws {
        let app = try Self.seededApplication()
        let cache = BacktestWindowCache(capacity: 1_000)
        let uncached = try Self.run(app, cache: nil, readers: readers)
        #expect(uncached.summary.hasPrefix("attempts 15 "), "\(uncached.summary)")
        let first = try Self.run(app, cache: cache, readers: readers)
        #expect(first.lines.contains("backtest: 0 of 3 complete hours already parsed"), "\(first.lines)")
        #expect(cache.statistics.hours == 3)
        #expect(cache.statistics.attempts == 9)
        let second = try Self.run(app, cache: cache, readers: readers)
        #expect(second.lines.contains("backtest: 3 of 3 complete hours already parsed"), "\(second.lines)")
        #expect(cache.statistics.hits == 3)
        #expect(cache.statistics.misses == 3)
        #expect(first.summary == uncached.summary)
        #expect(second.summary == uncached.summary)
        // Not trivially equal: the recorded values and the inputs both decide.
        #expect(uncached.summary.contains("t.burst="), "\(uncached.summary)")
        #expect(!uncached.summary.contains("t.burst=0"), "\(uncached.summary)")
    }

    @Test("An attempt inserted into a kept hour later, or a kept row changed, is read again")
    func changesAreSeen() throws {
        let app = try Self.seededApplication()
        let cache = BacktestWindowCache(capacity: 1_000)
        let before = try Self.run(app, cache: cache)

        // A late insert stamped inside 11:00-12:00 (another instance's clock, a slow commit).
        _ = try RulesTestData.insertAttempt(
            at: Self.hour.addingTimeInterval(3_600 + 1_500), card: "c2", device: "d9", customer: "u2",
            inputs: Self.riskyInputs, pool: app.pool)
        let inserted = try Self.run(app, cache: cache)
        #expect(inserted.lines.contains("backtest: 2 of 3 complete hours already parsed"), "\(inserted.lines)")
        #expect(inserted.summary.hasPrefix("attempts 16 "), "\(inserted.summary)")
        #expect(inserted.summary == (try Self.run(app, cache: nil)).summary)
        #expect(inserted.summary != before.summary)

        // A row of 12:00-13:00 changed by hand: same count, new xmin.
        try app.pool.withConnection { connection in
            try connection.execute(
                """
                UPDATE provisioning_attempts SET inputs = \(PostgresJSON(rawJSON: Self.riskyInputs))
                WHERE attempt_id = (SELECT attempt_id FROM provisioning_attempts
                                    WHERE created_at >= \(Self.hour.addingTimeInterval(7_200)) ORDER BY created_at LIMIT 1)
                """)
        }
        let updated = try Self.run(app, cache: cache)
        #expect(updated.lines.contains("backtest: 2 of 3 complete hours already parsed"), "\(updated.lines)")
        #expect(updated.summary == (try Self.run(app, cache: nil)).summary)
        #expect(updated.summary != inserted.summary)

        // A kept hour's row deleted by hand.
        try app.pool.withConnection { connection in
            try connection.execute(
                "DELETE FROM provisioning_attempts WHERE inputs::jsonb = \(PostgresJSON(rawJSON: Self.riskyInputs))")
        }
        let deleted = try Self.run(app, cache: cache)
        #expect(deleted.lines.contains("backtest: 1 of 3 complete hours already parsed"), "\(deleted.lines)")
        #expect(deleted.summary.hasPrefix("attempts 14 "), "\(deleted.summary)")
        #expect(deleted.summary == (try Self.run(app, cache: nil)).summary)
    }

    @Test("Hours that ended less than the lag ago are not kept, and no more than the capacity is")
    func recentHoursAndCapacity() throws {
        let app = try Self.seededApplication()
        // 13:04: the hour that ended at 13:00 is too recent.
        let recent = BacktestWindowCache(capacity: 1_000)
        let early = try Self.run(app, cache: recent, now: Self.hour.addingTimeInterval(3 * 3_600 + 240))
        #expect(early.lines.contains("backtest: 0 of 2 complete hours already parsed"), "\(early.lines)")
        #expect(recent.statistics.hours == 2)

        // Room for one hour of three attempts: the last one read stays, the run gives the same report.
        let small = BacktestWindowCache(capacity: 5)
        let uncached = try Self.run(app, cache: nil)
        #expect(try Self.run(app, cache: small).summary == uncached.summary)
        #expect(small.statistics.hours == 1)
        #expect(small.statistics.attempts == 3)
        let again = try Self.run(app, cache: small)
        #expect(again.lines.contains("backtest: 1 of 3 complete hours already parsed"), "\(again.lines)")
        #expect(again.summary == uncached.summary)

        // An hour larger than the capacity is never kept.
        let tiny = BacktestWindowCache(capacity: 2)
        _ = try Self.run(app, cache: tiny)
        #expect(tiny.statistics.hours == 0)
    }

    @Test(
        "A run with other velocity queries takes the kept hours too, parsing their features again, and the next run the same"
    )
    func otherQueries() throws {
        let app = try Self.seededApplication()
        let cache = BacktestWindowCache(capacity: 1_000)
        let uncached = try Self.run(app, cache: nil)
        let otherUncached = try Self.run(app, cache: nil, candidate: Self.otherCandidateText)
        #expect(otherUncached.summary != uncached.summary)
        #expect(try Self.run(app, cache: cache).summary == uncached.summary)
        let other = try Self.run(app, cache: cache, candidate: Self.otherCandidateText)
        #expect(other.lines.contains("backtest: 3 of 3 complete hours already parsed"), "\(other.lines)")
        #expect(other.summary == otherUncached.summary)
        // The kept hours now hold the other run's values (a third run with those queries parses nothing).
        let current = app.application.context.rules.current
        let otherQueries = HistoryBacktest.velocityQueries(of: [current, try Self.candidate(Self.otherCandidateText)])
        let hours = try #require(BacktestWindowCache.keptHours(since: Self.since, until: Self.until, now: Self.later))
        #expect(cache.lookup(hours).values.allSatisfy { $0.recorded.queries == otherQueries })
        #expect(try Self.run(app, cache: cache, candidate: Self.otherCandidateText).summary == otherUncached.summary)
        let back = try Self.run(app, cache: cache)
        #expect(back.lines.contains("backtest: 3 of 3 complete hours already parsed"), "\(back.lines)")
        #expect(back.summary == uncached.summary)
    }

    @Test("A run counting every value from history neither uses nor fills the kept hours")
    func countedFromHistory() throws {
        let app = try Self.seededApplication()
        let cache = BacktestWindowCache(capacity: 1_000)
        let counted = try Self.run(app, cache: nil, useRecorded: false)
        #expect(try Self.run(app, cache: cache, useRecorded: false).summary == counted.summary)
        #expect(cache.statistics.hours == 0)
        _ = try Self.run(app, cache: cache)
        #expect(cache.statistics.hours == 3)
        #expect(try Self.run(app, cache: cache, useRecorded: false).summary == counted.summary)
        #expect(try Self.run(app, cache: cache).summary == (try Self.run(app, cache: nil)).summary)
    }

    @Test("Attempts at the first and the last microsecond of an hour are kept in that hour")
    func hourBoundaries() throws {
        let app = try Self.seededApplication()
        let eleven = Self.hour.addingTimeInterval(3_600)
        for time in [
            eleven, eleven.addingTimeInterval(3_600 - 0.000_001), eleven.addingTimeInterval(7_200 - 0.000_001),
        ] {
            _ = try RulesTestData.insertAttempt(
                at: time, card: "c2", device: "d8", customer: "u2", inputs: Self.riskyInputs, pool: app.pool)
        }
        let stamps = try app.pool.withConnection { connection in
            try connection.query(
                "SELECT to_char(created_at AT TIME ZONE 'UTC', 'HH24:MI:SS.US') AS t FROM provisioning_attempts WHERE device_id = 'd8' ORDER BY 1"
            )
            .map { try $0.decode("t", as: String.self) }
        }
        #expect(stamps == ["11:00:00.000000", "11:59:59.999999", "12:59:59.999999"])
        let cache = BacktestWindowCache(capacity: 1_000)
        let first = try Self.run(app, cache: cache)
        let kept = cache.lookup(
            try #require(BacktestWindowCache.keptHours(since: Self.since, until: Self.until, now: Self.later)))
        #expect(
            kept.values.map(\.attempts.count).sorted() == [3, 5, 4].sorted(), "\(kept.mapValues(\.attempts.count))")
        let second = try Self.run(app, cache: cache)
        #expect(second.lines.contains("backtest: 3 of 3 complete hours already parsed"), "\(second.lines)")
        #expect(second.summary == first.summary)
        #expect(first.summary == (try Self.run(app, cache: nil)).summary)
    }

    @Test("Backtests at the same time on one cache all give the uncached report")
    func concurrentRuns() throws {
        let app = try Self.seededApplication(poolSize: 8)
        let uncached = try Self.run(app, cache: nil, readers: 1)
        let otherUncached = try Self.run(app, cache: nil, readers: 1, candidate: Self.otherCandidateText)
        let cache = BacktestWindowCache(capacity: 7)  // two hours of three: evictions too
        let results = Lock<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for round in 0..<4 {
                let text = (worker + round) % 2 == 0 ? Self.candidateText : Self.otherCandidateText
                let summary = (try? Self.run(app, cache: cache, readers: 1, candidate: text).summary) ?? "failed"
                let expected = text == Self.candidateText ? uncached.summary : otherUncached.summary
                results.withLock { $0.append(summary == expected ? "ok" : summary) }
            }
        }
        #expect(results.withLock { $0 } == Array(repeating: "ok", count: 16))
        #expect(cache.statistics.hits > 0)
        #expect(cache.statistics.attempts <= 7)
    }

    @Test("An hour without attempts is kept too")
    func emptyHour() throws {
        let app = try Self.seededApplication()
        // To 15:30: hours 10 to 14 complete, 14:00-15:00 without attempts.
        let until = Self.hour.addingTimeInterval(5 * 3_600 + 1_800)
        let cache = BacktestWindowCache(capacity: 1_000)
        let first = try Self.run(app, cache: cache, until: until)
        #expect(cache.statistics.hours == 5)
        #expect(cache.statistics.attempts == 12)
        let second = try Self.run(app, cache: cache, until: until)
        #expect(second.lines.contains("backtest: 5 of 5 complete hours already parsed"), "\(second.lines)")
        #expect(second.summary == first.summary)
        #expect(first.summary.hasPrefix("attempts 15 "), "\(first.summary)")
        // An attempt stamped later into the empty hour is seen.
        _ = try RulesTestData.insertAttempt(
            at: Self.hour.addingTimeInterval(4 * 3_600 + 60), card: "c2", device: "d9", customer: "u2",
            inputs: Self.riskyInputs, pool: app.pool)
        let third = try Self.run(app, cache: cache, until: until)
        #expect(third.lines.contains("backtest: 4 of 5 complete hours already parsed"), "\(third.lines)")
        #expect(third.summary.hasPrefix("attempts 16 "), "\(third.summary)")
    }

    @Test("A window over the limit is refused with its count, whether its hours are kept or not")
    func limit() throws {
        let app = try Self.seededApplication()
        let cache = BacktestWindowCache(capacity: 1_000)
        _ = try Self.run(app, cache: cache)
        #expect(try Self.run(app, cache: cache, limit: 8).summary == "tooManyAttempts(found: 15, limit: 8)")
        #expect(try Self.run(app, cache: cache, limit: 14).summary == "tooManyAttempts(found: 15, limit: 14)")
        #expect(try Self.run(app, cache: nil, limit: 14).summary == "tooManyAttempts(found: 15, limit: 14)")
    }

    @Test(
        "PostgreSQL's sum of the row hashes, taken modulo 2^64, is Swift's wrapping sum",
        arguments: [
            [Int64.min, Int64.max, -1, 1],
            [Int64.max, Int64.max, Int64.max],
            [Int64.min, Int64.min],
            [-5, -7, -9],
            [0],
            [Int64.max, 1],
        ])
    func hashSums(values: [Int64]) throws {
        let app = try TestApplication()
        let rows = values.map { "('\($0)'::int8)" }.joined(separator: ", ")
        let text = try app.pool.withConnection { connection in
            try connection.query(
                "SELECT \(unsafeSQL: BacktestWindowCache.hashSumSQL("v")) AS s FROM (VALUES \(unsafeSQL: rows)) t(v)"
            )
            .first?.decode("s", as: String.self)
        }
        let swift = values.reduce(Int64(0)) { $0 &+ $1 }
        #expect(BacktestWindowCache.hashSum(text: try #require(text)) == swift, "\(values): SQL \(text ?? "nil")")
    }

    @Test("The complete hours of a window")
    func keptHours() {
        let base = Self.hour
        let hourNumber = Int64(base.timeIntervalSince1970 / 3_600)
        #expect(
            BacktestWindowCache.keptHours(since: base, until: base.addingTimeInterval(7_200), now: Self.later)
                == hourNumber...(hourNumber + 1))
        #expect(
            BacktestWindowCache.keptHours(
                since: base.addingTimeInterval(1), until: base.addingTimeInterval(7_200), now: Self.later)
                == (hourNumber + 1)...(hourNumber + 1))
        #expect(
            BacktestWindowCache.keptHours(since: base, until: base.addingTimeInterval(3_599), now: Self.later) == nil)
        #expect(
            BacktestWindowCache.keptHours(
                since: base, until: base.addingTimeInterval(7_200), now: base.addingTimeInterval(7_499))
                == hourNumber...hourNumber)
        #expect(
            BacktestWindowCache.keptHours(
                since: base, until: base.addingTimeInterval(7_200), now: base.addingTimeInterval(7_500))
                == hourNumber...(hourNumber + 1))
        // A window past the longest kept one keeps no hour.
        let longest = Double(BacktestWindowCache.maximumHours) * 3_600
        #expect(
            BacktestWindowCache.keptHours(
                since: base, until: base.addingTimeInterval(longest), now: Self.later.addingTimeInterval(longest))
                == hourNumber...(hourNumber + Int64(BacktestWindowCache.maximumHours) - 1))
        #expect(
            BacktestWindowCache.keptHours(
                since: base, until: base.addingTimeInterval(longest + 3_600),
                now: Self.later.addingTimeInterval(longest)) == nil)
    }

    @Test(
        "A kept hour read for other queries: the shared ones copied, a new one parsed only where a text names it, as a full parse gives"
    )
    func keptHourForOtherQueries() {
        let day = VelocityQuery(metric: .attempts, key: .card, windowSeconds: 86_400)
        let week = VelocityQuery(metric: .attempts, key: .device, windowSeconds: 604_800)
        let new = VelocityQuery(metric: .attempts, key: .card, windowSeconds: 172_800)  // attempts(card, 48h)
        let texts = [
            #"{"attempts(card, 24h)": 2, "attempts(device, 7d)": 5}"#,
            #"{"attempts(card, 24h)": 1, "attempts(card, 48h)": 4}"#,  // the new query as a key
            // as an entry
            #"[{"query": "attempts(card, 48h)", "value": 7}, {"query": "attempts(card, 24h)", "value": 3}]"#,
            #"{"attempts(card, 24h)": null}"#,
            #"{"attempts(card, 48\u0068)": 9, "attempts(card, 24h)": 6}"#,  // escaped: parsed, whatever it spells
            "{}",
            // named in a value: parsed, not found
            #"{"note": "attempts(card, 48h) is not a key here", "attempts(device, 7d)": 1}"#,
        ]
        var kept = RecordedVelocity(queries: [day, week])
        for text in texts { kept.append(storedFeatures: text) }
        let hour = BacktestWindowCache.Hour(
            fingerprint: .empty, attempts: [], names: [], features: texts, recorded: kept)
        for queries in [[day, new, week], [new], [week, day], [day, week]] {
            var parsed = RecordedVelocity(queries: queries)
            for text in texts { parsed.append(storedFeatures: text) }
            let page = BacktestHistory.Page(kept: hour, queries: queries)
            #expect(page.recorded.count == texts.count)
            for row in texts.indices {
                #expect(page.recorded.row(row) == parsed.row(row), "\(queries) row \(row): \(texts[row])")
            }
        }
        #expect(BacktestHistory.Page(kept: hour, queries: [day, new]).recorded.row(1) == [1, 4])
        #expect(BacktestHistory.Page(kept: hour, queries: [new]).recorded.row(2) == [7])
        #expect(texts[4].utf8.contains(UInt8(ascii: "\\")), "the escaped text has its backslash")
        #expect(
            BacktestHistory.Page(kept: hour, queries: [new]).recorded.row(4) == [9], "the escaped name is the query's")
    }

    @Test("The byte search behind it: a name anywhere in the text, at either end, or any backslash")
    func mayName() {
        let needle = [Array(#""attempts(card, 48h)""#.utf8)]
        #expect(BacktestHistory.Page.mayName(#"{"attempts(card, 48h)": 1}"#, any: needle))
        #expect(BacktestHistory.Page.mayName(#""attempts(card, 48h)""#, any: needle))
        #expect(BacktestHistory.Page.mayName(#"{"a": "\n"}"#, any: needle))
        #expect(!BacktestHistory.Page.mayName(#"{"attempts(card, 24h)": 1, "attempts(card, 48h": 2}"#, any: needle))
        #expect(!BacktestHistory.Page.mayName(#""attempts(card, 48h)"#, any: needle), "the closing quote is missing")
        #expect(!BacktestHistory.Page.mayName("", any: needle))
        #expect(!BacktestHistory.Page.mayName("{}", any: needle))
        #expect(
            BacktestHistory.Page.mayName(
                #"{"x": 1, "y": "attempts(card, 48h)"}"#, any: [Array(#""y""#.utf8), needle[0]]))
    }
}
