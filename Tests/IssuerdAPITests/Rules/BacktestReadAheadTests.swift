import Foundation
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// A backtest over several slices reads each slice on a second connection while the one before is
/// replayed (``BacktestStream``), and spreads the velocity history over one part per core
/// (``SlidingVelocity``): neither may change a report or a changed attempt's row. Held against
/// one connection (every slice read in turn) and against the in-memory replay of the full export.
@Suite("Backtest reading ahead")
struct BacktestReadAheadTests {
    static let since = Date(timeIntervalSince1970: 1_740_787_200)  // 2025-03-01T00:00:00Z
    static let until = since.addingTimeInterval(6 * 86_400)

    /// 1,500 attempts over the six days and the two before, on 150 cards of 150 customers (each
    /// card its own last four, an attempt every 19 hours), channels in_app and tsp in turn, 500
    /// devices (an attempt every 64 hours);
    /// half of them recorded `attempts(card, 72h)` (as 0, so the replay tells recorded from
    /// counted), the others nothing.
    ///
    /// - Parameter shuffled: Rows stored in random order (not the time order a live table is
    ///   filled in), their times rounded down to the hour (ties, ordered by attempt id).
    static func seed(_ pool: PostgresPool, shuffled: Bool = false) throws {
        try pool.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO customers (customer_id) SELECT 'ra-u' || i FROM generate_series(1, 150) i
                """)
            try connection.execute(
                """
                INSERT INTO cards (card_id, customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four,
                                   expiration, cardholder_name, payment_network, primary_account_identifier)
                SELECT 'ra-c' || i, 'ra-u' || i, '\\x01'::bytea, 1, sha256(('ra-c' || i)::bytea), (1000 + i)::text,
                       '12/30', 'JANE DOE', 'visa', 'pai-ra-' || i
                FROM generate_series(1, 150) i
                """)
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, device_id, inputs, features,
                                                   hits, flow, decision, ruleset_version, created_at)
                SELECT md5('ra-' || i)::uuid, CASE WHEN i % 2 = 0 THEN 'in_app' ELSE 'tsp' END,
                       'ra-c' || (1 + i % 150), 'ra-u' || (1 + i % 150), 'ra-d' || (1 + i % 500),
                       json_build_object('request.channel', CASE WHEN i % 2 = 0 THEN 'in_app' ELSE 'tsp' END,
                                         'card.status', 'active', 'wallet.recommendation', 'approve',
                                         'wallet.device_score', 4, 'customer.name_match_score', 40 + i % 60),
                       CASE WHEN i % 2 = 0 THEN '{"attempts(card, 72h)": 0}' ELSE '{}' END::json,
                       '[]'::jsonb, 'green', 'APPROVED', 'sha256:test',
                       CASE WHEN \(shuffled) THEN date_trunc('hour', t) ELSE t END
                FROM generate_series(1, 1500) i,
                     LATERAL (SELECT \(Self.since) - interval '2 days' + make_interval(secs => i * 8 * 86400.0 / 1500) AS t) times
                ORDER BY CASE WHEN \(shuffled) THEN md5(i::text) ELSE lpad(i::text, 8, '0') END
                """)
        }
    }

    static let candidate = [
        RulesTestData.rule("t.card_counted", outcome: "orange", when: "attempts(card, 48h) >= 3"),
        RulesTestData.rule("t.card_recorded", when: "attempts(card, 72h) >= 1 and customer.name_match_score < 60"),
        RulesTestData.rule("t.device_counted", when: "attempts(device, 72h) >= 1"),
    ].joined()

    static func run(
        _ app: TestApplication, readers: Int, useRecorded: Bool
    ) throws -> (
        Backtest.Report, [String], [String]
    ) {
        let candidate = try RulesetCompiler.compile(
            [RulesetFile(path: "candidate.rules", contents: Self.candidate)], contentHasher: RulesetContent.fnv1a64)
        var lines: [String] = []
        var rows: [String] = []
        let outcome = try HistoryBacktest.run(
            current: app.application.context.rules.current, candidate: candidate, since: Self.since,
            until: Self.until, limit: 10_000, useRecordedVelocity: useRecorded, database: app.pool, readers: readers,
            progress: { lines.append($0) }, changed: { rows += $0.map(\.csvLine) })
        guard case .report(let report, _) = outcome else {
            Issue.record("unexpected \(outcome)")
            throw CancellationError()
        }
        return (report, rows, lines)
    }

    @Test("Reading ahead on a second connection gives one connection's report and rows", arguments: [true, false])
    func sameAsOneConnection(useRecorded: Bool) throws {
        let app = try TestApplication(poolSize: 4)
        try Self.seed(app.pool)
        let (alone, aloneRows, aloneLines) = try Self.run(app, readers: 1, useRecorded: useRecorded)
        let (ahead, aheadRows, aheadLines) = try Self.run(app, readers: 2, useRecorded: useRecorded)
        #expect(aloneLines.first == "backtest: reading on 1 connection in one snapshot")
        #expect(aheadLines.first == "backtest: reading on 2 connections in one snapshot")
        // Several slices: the first an hour, then a day each (few attempts an hour).
        let progress = aheadLines.filter { $0.contains("attempts replayed") }
        #expect(progress.count >= 2, "\(aheadLines)")
        #expect(ahead.attempts == 1_125)  // the six days' share of the 1,500
        #expect(ahead.attempts == alone.attempts)
        #expect(ahead.changed > 0, "\(ahead.currentMix) \(ahead.candidateMix)")
        #expect(ahead.changed == alone.changed)
        #expect(ahead.transitions == alone.transitions)
        #expect(ahead.currentHits == alone.currentHits)
        #expect(ahead.candidateHits == alone.candidateHits)
        #expect(aheadRows == aloneRows)
        #expect(aheadRows.count == ahead.changed)
        // Each changed row names its attempt's stored channel and its card's last four.
        for row in aheadRows {
            let cells = row.split(separator: ",", omittingEmptySubsequences: false)
            #expect(["in_app", "tsp"].contains(cells[2]), "\(row)")
            #expect(cells[3].count == 4 && cells[3].hasPrefix("1"), "\(row)")
        }
    }

    @Test(
        "Reading ahead, every value counted, gives the in-memory replay of the full export, rows stored in order or not",
        arguments: [false, true])
    func sameAsFullExport(shuffled: Bool) throws {
        let app = try TestApplication(poolSize: 4)
        try Self.seed(app.pool, shuffled: shuffled)
        let (ahead, _, _) = try Self.run(app, readers: 2, useRecorded: false)
        let candidate = try RulesetCompiler.compile(
            [RulesetFile(path: "candidate.rules", contents: Self.candidate)], contentHasher: RulesetContent.fnv1a64)
        let current = app.application.context.rules.current
        let export = HistoryExport(
            since: Self.since, until: Self.until, lookbackSeconds: HistoryExport.lookback(for: [current, candidate]))
        let full = Backtest.run(
            current: current, candidate: candidate,
            log: try AttemptLog(
                jsonLines: BacktestHistoryRestrictionTests.lines(export, pool: app.pool).joined(separator: "\n")))
        #expect(ahead.attempts == full.attempts)
        #expect(ahead.changed == full.changed)
        #expect(ahead.transitions == full.transitions)
        #expect(ahead.currentHits == full.currentHits)
        #expect(ahead.candidateHits == full.candidateHits)
        #expect(ahead.currentMix == full.currentMix)
        #expect(ahead.candidateMix == full.candidateMix)
        // The sample is the first changed attempts by time, then id, however the rows lie.
        #expect(ahead.sample.count == 20)
        #expect(ahead.sample.map(\.attemptID) == full.sample.map(\.attemptID))
    }

    @Test("The reader thread lets go of its connection: an empty window, a bad attempt in a later slice, a cancel")
    func readerStops() throws {
        let app = try TestApplication(poolSize: 4)
        try Self.seed(app.pool)
        let current = app.application.context.rules.current
        let candidate = try RulesetCompiler.compile(
            [RulesetFile(path: "candidate.rules", contents: Self.candidate)], contentHasher: RulesetContent.fnv1a64)
        // An empty window on two connections ends at once.
        let empty = try HistoryBacktest.run(
            current: current, candidate: candidate, since: Self.since, until: Self.since, limit: 10, database: app.pool,
            readers: 2)
        guard case .report(let nothing, _) = empty else {
            Issue.record("unexpected \(empty)")
            return
        }
        #expect(nothing.attempts == 0)
        // Cancelled after the first slice: the run stops, the slice being read ahead is waited for.
        let control = HistoryBacktest.Control()
        #expect(throws: HistoryBacktest.Cancelled.self) {
            try HistoryBacktest.run(
                current: current, candidate: candidate, since: Self.since, until: Self.until, limit: 10_000,
                database: app.pool, readers: 2, control: control,
                progress: { line in if line.contains("attempts replayed") { control.cancel() } })
        }
        // A stored attempt that does not parse, four days in: named, after the slices before it.
        try RulesTestData.insertAttempt(
            at: Self.since.addingTimeInterval(4 * 86_400 + 30), card: "ra-c1", device: "ra-d1", customer: "ra-u1",
            inputs: #"{"card.status":5}"#, pool: app.pool)
        for readers in [1, 2] {
            let watch = HistoryBacktest.Control()
            #expect(throws: HistoryBacktest.ExportError.self) {
                try HistoryBacktest.run(
                    current: current, candidate: candidate, since: Self.since, until: Self.until, limit: 10_000,
                    database: app.pool, readers: readers, control: watch)
            }
            let replayed = watch.progress?.replayed ?? 0
            #expect(replayed > 0 && replayed < 1_125, "the slices before the bad one were replayed: \(replayed)")
        }
        // Every connection is back in the pool: a run on all four still joins them.
        var lines: [String] = []
        _ = try HistoryBacktest.run(
            current: current, candidate: candidate, since: Self.since, until: Self.since.addingTimeInterval(86_400),
            limit: 10_000, database: app.pool, readers: 3, progress: { lines.append($0) })
        #expect(lines.first == "backtest: reading on 3 connections in one snapshot")
    }
}
