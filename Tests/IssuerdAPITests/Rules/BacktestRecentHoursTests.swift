import Foundation
import IssuerdCore
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk
import Testing

@testable import IssuerdAPI

/// The most recent hours kept parsed on the server's own initiative
/// (`ISSUERD_BACKTEST_KEEP_RECENT_HOURS`, ``BacktestPreparation/keepRecent(hours:limit:current:clock:)``),
/// over RulesHistoryTests' seeded attempts (09:50, 10:00, 10:01, 10:02 and 12:00 on 2025-03-01).
@Suite("Backtest: the most recent hours kept parsed")
struct BacktestRecentHoursTests {
    /// 13:10 on the seed's day: the hours 10:00, 11:00 and 12:00 are complete.
    static let now = RulesHistoryTests.since.addingTimeInterval(3 * 3_600 + 600)
    static let hour10 = Int64(RulesHistoryTests.since.timeIntervalSince1970 / 3_600)

    static func quietLogger() -> Logger { Logger(label: "t", minimumLevel: .critical, handler: DiscardingLogHandler()) }

    @Test(
        "At start the server reads the last hours it is told to keep: the first backtest of them reads no complete hour"
    )
    func keptAtStart() throws {
        // The attempts exist before the server starts, as on a restart.
        let seeding = try TestApplication()
        _ = try RulesHistoryTests.seed(seeding.pool)
        let app = try TestApplication(
            environment: ["ISSUERD_BACKTEST_KEEP_RECENT_HOURS": "4"], sharing: seeding, clock: { Self.now })
        let preparation = app.application.context.backtestPreparation
        try RulesHistoryTests.waitForPreparations(preparation, count: 1)
        let cache = app.application.context.backtestCache
        // The last 4 complete hours at 13:10: 09:00-12:00, with 5 attempts (09:50 among them).
        #expect(cache.lookup((Self.hour10 - 1)...(Self.hour10 + 2)).count == 4)
        #expect(cache.statistics.attempts == 5)
        #expect(cache.statistics.misses == 4)
        let analyst = ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"]
        let response = try app.client.postJSON(
            "/v1/admin/rules/backtest", try RulesHistoryTests.backtestBody(RulesHistoryTests.candidate),
            headers: analyst)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.jsonObject()?["attemptsEvaluated"] as? Int == 3)
        #expect(cache.statistics.hits == 1, "the backtest's hour was not taken from memory")
        #expect(cache.statistics.misses == 4, "the backtest read a complete hour again")
        // The same report as a server keeping nothing.
        let uncached = try TestApplication(environment: ["ISSUERD_BACKTEST_CACHE_ATTEMPTS": "0"], sharing: seeding)
        let plain = try uncached.client.postJSON(
            "/v1/admin/rules/backtest", try RulesHistoryTests.backtestBody(RulesHistoryTests.candidate),
            headers: analyst)
        #expect(
            NSDictionary(dictionary: try #require(plain.jsonObject()))
                == NSDictionary(dictionary: try #require(response.jsonObject())))
    }

    @Test("Off by 0 or with the cache off; a malformed or too long setting refuses to start")
    func settings() throws {
        let off = try TestApplication(environment: ["ISSUERD_BACKTEST_KEEP_RECENT_HOURS": "0"], clock: { Self.now })
        let noCache = try TestApplication(
            environment: ["ISSUERD_BACKTEST_KEEP_RECENT_HOURS": "24", "ISSUERD_BACKTEST_CACHE_ATTEMPTS": "0"],
            sharing: off, clock: { Self.now })
        for app in [off, noCache] {
            #expect(!app.application.context.backtestPreparation.keepsRecentHours)
            #expect(app.application.context.backtestPreparation.finishedCount == 0)
        }
        for value in ["-1", "24h", String(BacktestWindowCache.maximumHours + 1)] {
            #expect(throws: ConfigurationError.self, "\(value)") {
                _ = try IssuerdConfiguration(
                    ConfigurationReader(
                        ConfigurationTests.minimal.merging(["ISSUERD_BACKTEST_KEEP_RECENT_HOURS": value]) { _, new in
                            new
                        }))
            }
        }
        let configured = try IssuerdConfiguration(ConfigurationReader(ConfigurationTests.minimal))
        #expect(configured.console.backtestKeepRecentHours == 24)
    }

    /// Holds `provisioning_attempts` under an exclusive lock and starts the analyst's read of the
    /// 10:00 hour on `preparation`; returns once that read waits on the lock (ROLLBACK to let it go).
    static func holdAnalystRead(
        _ app: TestApplication, _ preparation: BacktestPreparation, current: Ruleset
    ) throws -> PostgresConnection {
        let holder = try PostgresConnection(connectionString: app.database.connectionString)
        try holder.execute("BEGIN")
        try holder.execute("LOCK TABLE provisioning_attempts IN ACCESS EXCLUSIVE MODE")
        let hour = RulesHistoryTests.since
        #expect(
            preparation.start(
                current: current, since: hour, until: hour.addingTimeInterval(3_600), limit: 100, now: Self.now))
        let (waiting, activity) = try app.database.waitUntilBlocked(by: holder.backendProcessID, within: 120)
        #expect(waiting, "the read-ahead never waited on the lock: \(activity)")
        return holder
    }

    /// The seeded attempts, a cache and a read-ahead queue of its own over them (stop it when done).
    static func seededQueue() throws -> (TestApplication, BacktestWindowCache, BacktestPreparation) {
        let app = try TestApplication()
        _ = try RulesHistoryTests.seed(app.pool)
        let cache = BacktestWindowCache(capacity: 1_000)
        return (app, cache, BacktestPreparation(cache: cache, database: app.pool, logger: Self.quietLogger()))
    }

    /// The analyst's read-ahead of the 11:00 hour (it waits in the queue behind the 10:00 one).
    static func requestElevenOClock(_ preparation: BacktestPreparation, current: Ruleset) {
        let hour = RulesHistoryTests.since
        #expect(
            preparation.start(
                current: current, since: hour.addingTimeInterval(3_600), until: hour.addingTimeInterval(7_200),
                limit: 100, now: Self.now))
    }

    /// Starts the rounds of the last complete hour (12:00 at 13:10) and waits for the first offer.
    static func startRounds(_ preparation: BacktestPreparation, current: Ruleset) throws {
        let started = preparation.keepRecent(
            hours: 1, limit: 100, current: { current }, clock: { Self.now }, retry: 0.2)
        #expect(started)
        guard RulesTestData.eventually(within: 60, { preparation.recentRoundCount > 0 }) else {
            throw RulesHistoryTests.TestTimeout("no round was offered")
        }
    }

    @Test("A round never replaces an analyst's read-ahead waiting in the queue; refused, it is offered again")
    func analystsGoFirst() throws {
        let (app, cache, preparation) = try Self.seededQueue()
        defer { preparation.stop(timeout: .seconds(5)) }
        let current = app.application.context.rules.current
        // The analyst's 10:00 read waits on the lock; their 11:00 request waits behind it.
        let holder = try Self.holdAnalystRead(app, preparation, current: current)
        Self.requestElevenOClock(preparation, current: current)
        // The first round (12:00) comes now, and is refused: the 11:00 request keeps its place.
        try Self.startRounds(preparation, current: current)
        try holder.execute("ROLLBACK")
        // 10:00, 11:00, then the round offered again (every 0.2 s) once the queue was free.
        try RulesHistoryTests.waitForPreparations(preparation, count: 3)
        #expect(cache.lookup((Self.hour10 + 1)...(Self.hour10 + 1)).count == 1, "the analyst's 11:00 request ran")
        #expect(
            cache.lookup((Self.hour10 + 2)...(Self.hour10 + 2)).count == 1, "the refused round was not offered again")
        #expect(preparation.recentRoundCount >= 2)
        let again = preparation.keepRecent(hours: 1, limit: 100, current: { current }, clock: { Self.now })
        #expect(!again, "started twice")
    }

    @Test("A waiting round an analyst's request puts out of the queue is offered again after it")
    func displacedRoundComesBack() throws {
        let (app, cache, preparation) = try Self.seededQueue()
        defer { preparation.stop(timeout: .seconds(5)) }
        let current = app.application.context.rules.current
        // The analyst's 10:00 read waits on the lock; the round (12:00) waits behind it.
        let holder = try Self.holdAnalystRead(app, preparation, current: current)
        try Self.startRounds(preparation, current: current)
        // The analyst's 11:00 request takes the round's place.
        Self.requestElevenOClock(preparation, current: current)
        try holder.execute("ROLLBACK")
        try RulesHistoryTests.waitForPreparations(preparation, count: 3)
        #expect(cache.lookup((Self.hour10 + 1)...(Self.hour10 + 1)).count == 1, "the analyst's 11:00 request ran")
        #expect(cache.lookup((Self.hour10 + 2)...(Self.hour10 + 2)).count == 1, "the displaced round did not come back")
    }

    @Test("A round that finds more attempts than it may keep keeps nothing; stopped rounds start nothing")
    func overTheLimit() throws {
        let (app, cache, preparation) = try Self.seededQueue()
        defer { preparation.stop(timeout: .seconds(5)) }
        let current = app.application.context.rules.current
        // The last 4 complete hours at 13:10 (09:00-12:00) hold 5 attempts, over a limit of 2.
        let started = preparation.keepRecent(hours: 4, limit: 2, current: { current }, clock: { Self.now })
        #expect(started)
        try RulesHistoryTests.waitForPreparations(preparation, count: 1)
        #expect(cache.statistics.attempts == 0, "a round over the limit kept hours")
        // Stopped before they start: never started afterwards.
        let stopped = BacktestPreparation(cache: cache, database: app.pool, logger: Self.quietLogger())
        stopped.stopRecentRounds(timeout: .seconds(1))
        let late = stopped.keepRecent(hours: 4, limit: 100, current: { current }, clock: { Self.now })
        #expect(!late)
        #expect(!stopped.keepsRecentHours)
        let thread = BackgroundThread(name: "t")
        #expect(thread.stop(timeout: .seconds(1)))
        #expect(!thread.start {}, "a thread stopped before it started started")
    }

    @Test(
        "A read-ahead reports the hours it found kept and the hours it read (its log's fields), or the attempts over its limit"
    )
    func preparationCounts() throws {
        let app = try TestApplication()
        _ = try RulesHistoryTests.seed(app.pool)
        let cache = BacktestWindowCache(capacity: 1_000)
        let current = app.application.context.rules.current
        // 10:00-13:00: three complete hours (10:00 with 3 attempts, 11:00 empty, 12:00 with 1).
        func prepare(limit: Int) throws -> HistoryBacktest.Preparation {
            try HistoryBacktest.prepare(
                current: current, since: RulesHistoryTests.since,
                until: RulesHistoryTests.since.addingTimeInterval(10_800),
                limit: limit, database: app.pool, cache: cache, now: Self.now)
        }
        #expect(try prepare(limit: 3) == .tooManyAttempts(found: 4))
        #expect(try prepare(limit: 100) == .prepared(hoursKept: 0, hoursRead: 3))
        #expect(try prepare(limit: 100) == .prepared(hoursKept: 3, hoursRead: 0))
        // A backtest in between (the cache's own counters move) does not change what a read-ahead reports.
        _ = try HistoryBacktest.run(
            current: current, candidate: current, since: RulesHistoryTests.since,
            until: RulesHistoryTests.since.addingTimeInterval(3_600), limit: 100, database: app.pool, cache: cache,
            now: Self.now)
        #expect(try prepare(limit: 100) == .prepared(hoursKept: 3, hoursRead: 0))
    }

    @Test(
        "The next round is due one second after the next hour has been complete for the lag; a round reads the last N complete hours"
    )
    func nextRound() {
        let hour = Date(timeIntervalSince1970: 1_740_834_000)  // 13:00
        let lag = BacktestWindowCache.lag
        #expect(BacktestPreparation.secondsUntilNextHourIsKept(after: hour) == lag + 1)
        #expect(BacktestPreparation.secondsUntilNextHourIsKept(after: hour.addingTimeInterval(lag - 1)) == 2)
        #expect(BacktestPreparation.secondsUntilNextHourIsKept(after: hour.addingTimeInterval(lag + 1)) == 3_600)
        #expect(BacktestPreparation.secondsUntilNextHourIsKept(after: hour.addingTimeInterval(3_599)) == lag + 2)
        // 13:10: the last complete hour is 12:00; 13:04:59: it is still 11:00 (12:00 ended under the lag ago).
        #expect(
            BacktestPreparation.recentStart(hours: 3, now: hour.addingTimeInterval(600))
                == hour.addingTimeInterval(-3 * 3_600))
        #expect(
            BacktestPreparation.recentStart(hours: 1, now: hour.addingTimeInterval(lag - 1))
                == hour.addingTimeInterval(-2 * 3_600))
        let now = hour.addingTimeInterval(600)
        #expect(
            BacktestWindowCache.keptHours(
                since: BacktestPreparation.recentStart(hours: 1, now: now), until: now, now: now)?.count == 1)
    }
}
