import Dispatch
import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk
import Synchronization

/// Reading a backtest's attempts from PostgreSQL rows straight into the replay's types (no JSON
/// Lines text in between; `issuerd rules export` and `rules backtest FILE` keep that format,
/// through ``HistoryExport`` and `AttemptLog`): the attempts of a time range with their
/// attributes (the same ones the export writes) and, for each velocity query of the two
/// rulesets, the value its decision recorded in `features` (``RecordedVelocity``).
/// ``BacktestStream`` reads a window through it one slice at a time.
///
/// Run it inside one REPEATABLE READ transaction (it reads through cursors).
package enum BacktestHistory {
    /// Rows fetched per round trip: small enough that parsing a page overlaps fetching the next.
    package static let fetchSize = 4_000

    /// A stored attempt whose attributes cannot be replayed.
    package struct BadAttempt: Error, Sendable {
        package var id: String
        package var message: String
    }

    /// The predicate of the partial index `attempts_time_keys` (sql/0017): true of every
    /// attempt, and stated only by the history read by time, so that only it is planned through
    /// the index.
    package static let timeKeysPredicate = "a.created_at > '-infinity'"

    /// Reads and parses the attempts of `[since, until)` into `cache` (their complete hours),
    /// with their recorded values for `queries`, ahead of a backtest of that period; nothing else
    /// (kept hours are only checked, not rebuilt, and nothing is sorted).
    ///
    /// - Throws: ``PostgresError``, ``BadAttempt``, or ``TooMany`` past `limit`.
    /// - Returns: The period's complete hours found kept and unchanged, and those read.
    package static func prepare(
        since: Date, until: Date, queries: [VelocityQuery], limit: Int, connections: [PostgresConnection],
        cache: BacktestWindowCache, now: Date
    ) throws -> (kept: Int, read: Int) {
        var hours = (kept: 0, read: 0)
        _ = try readAttempts(
            since: since, until: until, queries: queries, useRecorded: true, limit: limit, connections: connections,
            cache: cache, now: now, keepOnly: true, progress: { _ in }, hours: { hours = ($0, $1) })
        return hours
    }

    /// The attempts of the window in the pages they were parsed in (each with its names and
    /// recorded values for `queries`), with their order as the export's (time, then id). The
    /// JSON columns come as stored and are parsed here: extracting them in SQL (`jsonb_each`, a
    /// lookup per query) cost PostgreSQL ~45 µs a row, five times the parse. The window (less the hours `cache`
    /// holds, unchanged in this snapshot) is cut into one time slice per connection, read at the
    /// same time; each page is decoded and parsed on another core while the next one is fetched;
    /// all are done before this returns, and the complete hours read are kept in `cache`.
    static func readAttempts(
        since: Date, until: Date, queries: [VelocityQuery], useRecorded: Bool, limit: Int,
        connections: [PostgresConnection], cache: BacktestWindowCache?, now: Date, keepOnly: Bool = false,
        progress: (String) -> Void,
        hours counted: (_ kept: Int, _ read: Int) -> Void = { _, _ in }
    ) throws -> Window {
        // With a cache, the complete hours kept by earlier runs and still equal to this
        // snapshot's rows are taken from memory; the rest of the window is read, in runs of time
        // cut into one slice per connection, and its complete hours are kept afterwards.
        var fromCache: [Int64: BacktestWindowCache.Hour] = [:]
        var keepable: ClosedRange<Int64>?
        if let cache, cache.capacity > 0,
            let hours = BacktestWindowCache.keptHours(since: since, until: until, now: now)
        {
            keepable = hours
            let kept = cache.lookup(hours)
            if !kept.isEmpty {
                let current = try fingerprints(of: kept.keys.sorted(), connections: connections)
                for (hour, content) in kept where content.fingerprint == current[hour] ?? .empty {
                    fromCache[hour] = content
                }
            }
            cache.touch(fromCache.keys.sorted(), misses: hours.count - fromCache.count)
            counted(fromCache.count, hours.count - fromCache.count)
            progress("backtest: \(fromCache.count) of \(hours.count) complete hours already parsed")
        }
        // Rows carry what keeping needs only when some complete hour is to be kept.
        let keepFeatures = keepable.map { fromCache.count < $0.count } ?? false
        var ranges: [(Date, Date)] = []
        var runStart = since
        for hour in fromCache.keys.sorted() {
            let start = Date(timeIntervalSince1970: Double(hour) * 3600)
            if runStart < start { ranges += slices(from: runStart, to: start, count: connections.count) }
            runStart = start.addingTimeInterval(3600)
        }
        if runStart < until { ranges += slices(from: runStart, to: until, count: connections.count) }
        let cachedRows = fromCache.values.reduce(0) { $0 + $1.attempts.count }
        if cachedRows > limit {
            throw TooMany(
                found: try HistoryExport(since: since, until: until, lookbackSeconds: 0).attemptCount(
                    connection: connections[0]))
        }
        // Pages by (range, page in range); every range's pages are in time order within it.
        let pages = Lock<[Int: [Int: Result<Page, Error>]]>([:])
        let rowTotal = Lock(cachedRows)
        let badPage = Atomic(false)
        let group = DispatchGroup()
        // No count(*) first: a second scan of the window. Only a window over the limit is counted.
        let completes: [Bool]
        do {
            defer { group.wait() }
            completes = try inParallel(ranges.count, connections: connections) { slice, connection, failedElsewhere in
                let (from, to) = ranges[slice]
                let cursor = "issuerd_backtest_attempts"
                let query: PostgresQuery = """
                    DECLARE issuerd_backtest_attempts NO SCROLL CURSOR FOR
                    SELECT a.attempt_id, a.created_at, a.card_id, a.device_id, a.customer_id, a.cardholder_name_hash,
                           a.inputs, CASE WHEN \(useRecorded) THEN a.features::json ELSE '{}'::json END,
                           \(unsafeSQL: keepFeatures ? BacktestWindowCache.rowHashSQL : "0::int8"),
                           \(unsafeSQL: RequestChecks.legacyChecksSQL)
                    FROM provisioning_attempts a
                    WHERE a.created_at >= \(from) AND a.created_at < \(to)
                    """
                var pageIndex = 0
                return try streamPages(query, cursor: cursor, connection: connection) { rows in
                    let index = pageIndex
                    pageIndex += 1
                    // Counted and printed under one lock, so the lines go up in order.
                    let total = rowTotal.withLock { total in
                        total += rows.count
                        if total / 50_000 > (total - rows.count) / 50_000 {
                            progress("backtest: \(total) attempts read")
                        }
                        return total
                    }
                    guard total <= limit, !failedElsewhere(), !badPage.load(ordering: .relaxed) else { return false }
                    group.enter()
                    DispatchQueue.global().async {
                        let page = Result {
                            try Page(rows, queries: queries, useRecorded: useRecorded, keepFeatures: keepFeatures)
                        }
                        // the others stop at their next page
                        if case .failure = page { badPage.store(true, ordering: .relaxed) }
                        pages.withLock { $0[slice, default: [:]][index] = page }
                        group.leave()
                    }
                    return true
                }
            }
        }
        // A page that did not parse names its attempt, before anything else (it stopped the reads).
        var parsed: [Page] = []
        try pages.withLock { pages in
            for slice in ranges.indices {
                let slicePages = pages[slice] ?? [:]
                for index in 0..<slicePages.count { if let page = slicePages[index] { parsed.append(try page.get()) } }
            }
        }
        if completes.contains(false) {
            throw TooMany(
                found: try HistoryExport(since: since, until: until, lookbackSeconds: 0).attemptCount(
                    connection: connections[0]))
        }
        if let cache, let keepable {
            // Before the kept hours' pages join `parsed`: those carry no hashes.
            if keepFeatures { keep(parsed, hours: keepable, except: fromCache, queries: queries, in: cache) }
            if keepOnly { return Window(pages: [], order: []) }
            // The kept hours' recorded values for this run's queries: as kept when the last run
            // had the same queries, else parsed from the kept text on every core (and kept).
            let kept = fromCache.sorted { $0.key < $1.key }
            let built = Lock<[Int: Page]>([:])
            DispatchQueue.concurrentPerform(iterations: kept.count) { index in
                let (hour, content) = kept[index]
                let page = Page(kept: content, queries: queries)
                if content.recorded.queries != queries {
                    cache.remember(page.recorded, hour: hour, fingerprint: content.fingerprint)
                }
                built.withLock { $0[index] = page }
            }
            built.withLock { built in for index in kept.indices { parsed.append(built[index]!) } }
        }
        if keepOnly { return Window(pages: [], order: []) }
        // Sorted here rather than by PostgreSQL, whose sort of the wide rows spilled to disk; by
        // keys taken out once (comparing the attempts themselves copied one per comparison). The
        // attempts stay in their pages: copying them into one array in that order moved every
        // attempt's bytes once more (a tenth of a quarter's backtest), and the replay reads them
        // through the order instead.
        struct SortKey {
            var time: Date
            var position: Backtest.Position
        }
        var keys: [SortKey] = []
        keys.reserveCapacity(parsed.reduce(0) { $0 + $1.attempts.count })
        for page in parsed.indices {
            for row in parsed[page].attempts.indices {
                keys.append(
                    SortKey(
                        time: parsed[page].attempts[row].time,
                        position: Backtest.Position(page: Int32(page), row: Int32(row))))
            }
        }
        // Ties in time by id, read in place.
        func before(_ a: SortKey, _ b: SortKey) -> Bool {
            if a.time != b.time { return a.time < b.time }
            return parsed[Int(a.position.page)].attempts[Int(a.position.row)].id
                < parsed[Int(b.position.page)].attempts[Int(b.position.row)].id
        }
        // Rows mostly come in time order (a table filled as decisions are made): checked first.
        if zip(keys, keys.dropFirst()).contains(where: { before($1, $0) }) {
            keys.sort(by: before)
        }
        return Window(pages: parsed, order: keys.map(\.position))
    }

    /// A window's attempts as read: in pages, and their order by time, then id.
    package struct Window: Sendable {
        package var pages: [Page]
        package var order: [Backtest.Position]

        /// Attempts in all.
        package var count: Int { order.count }

        /// The index in ``order`` of the attempt `id` at `time`, nil when the window does not hold
        /// it: a binary search by (time, id), the order's own.
        package func index(of id: String, at time: Date) -> Int? {
            func attempt(_ index: Int) -> (time: Date, id: String) {
                let position = order[index]
                let attempt = pages[Int(position.page)].attempts[Int(position.row)]
                return (attempt.time, attempt.id)
            }
            var low = 0
            var high = order.count
            while low < high {
                let middle = (low + high) / 2
                let found = attempt(middle)
                if found.time < time || (found.time == time && found.id < id) {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            guard low < order.count, attempt(low) == (time, id) else { return nil }
            return low
        }
    }

    /// One fetched page of window attempts, decoded and parsed (or a kept hour's attempts).
    package struct Page: Sendable {
        // Attempts and their cardholder name hashes apart: arrays of (attempt, name) tuples were
        // copied through the runtime's generic tuple witnesses, a third of the merge's time.
        package var attempts: [AttemptLog.Attempt] = []
        package var names: [String?] = []
        package var recorded: RecordedVelocity
        /// The stored `features` text of each attempt, when its hour may be kept.
        package var features: [String] = []
        /// Each row's hash of its id and `xmin`, when its hour may be kept (for the hour's fingerprint).
        package var hashes: [Int64] = []

        package init(_ rows: PostgresRows, queries: [VelocityQuery], useRecorded: Bool, keepFeatures: Bool) throws {
            recorded = RecordedVelocity(queries: queries)
            if useRecorded { recorded.reserveCapacity(rows: rows.count) }
            attempts.reserveCapacity(rows.count)
            names.reserveCapacity(rows.count)
            if keepFeatures { features.reserveCapacity(rows.count) }
            // The two documents are parsed where libpq holds them (a `String` of each was a
            // copy and a UTF-8 check per row), through one reader and one table reused per row.
            var reader = AttemptLog.StoredInputReader()
            for row in rows {
                let id: String = try row.decode(0)
                let time: Date = try row.decode(1)
                let parsed = try row.withBytes(6) { bytes in
                    // NOT NULL in the schema
                    guard let bytes else { throw BadAttempt(id: id, message: "inputs are NULL") }
                    return reader.input(storedInputs: bytes, time: time)
                }
                let input: RiskInput
                switch parsed {
                case .success(let value): input = value
                case .failure(let error): throw BadAttempt(id: id, message: error.message)
                }
                // Recorded with the inputs; for an older TSP attempt derived from its hits in SQL.
                var checks = reader.checks ?? .none
                if reader.checks == nil, let derived = try row.decode(9, as: String?.self) {
                    guard let parsed = RequestChecks(jsonText: derived) else {
                        throw BadAttempt(id: id, message: "its checks derived from its hits do not parse: \(derived)")
                    }
                    checks = parsed
                }
                if useRecorded || keepFeatures {
                    try row.withBytes(7) { bytes in
                        // NOT NULL in the schema
                        guard let bytes else { throw BadAttempt(id: id, message: "features are NULL") }
                        if useRecorded { recorded.append(storedFeatures: bytes) }
                        if keepFeatures { features.append(String(decoding: bytes, as: UTF8.self)) }
                    }
                }
                if keepFeatures { hashes.append(try row.decode(8)) }
                let subject = VelocitySubject(
                    cardID: try row.decode(2), deviceID: try row.decode(3), customerID: try row.decode(4))
                attempts.append(
                    AttemptLog.Attempt(id: id, time: time, subject: subject, input: input, line: 0, checks: checks))
                names.append(try row.decode(5))
            }
        }
    }

    /// The window holds more attempts than the limit.
    package struct TooMany: Error {
        package var found: Int
    }
}
