import Foundation
import IssuerdPostgres
import IssuerdRisk

/// A backtest that reads its window in time order, one slice at a time, in one snapshot, and
/// keeps of it only the tallies (``Backtest/Accumulator``) and the velocity history the rules'
/// longest windows can still reach (``SlidingVelocity``): its memory is bounded by one slice's
/// attempts and the keys active within those windows, not by the length of the window.
///
/// Each slice: its attempts (read, parsed and sorted as ``BacktestHistory`` reads a window,
/// through the ``BacktestWindowCache`` when there is one); for a query some of them did not
/// record a value for, and whose history is not kept yet, the history of its (event kind, key)
/// over its window before the slice, read by time, kept from then on; the other events of the
/// slice's time range; then the attempts join the history and are replayed on every core. When
/// every attempt recorded every value, no history is read or kept. A slice covers about ``targetRows`` attempts, its length set from the rate
/// of the one before (between a minute and a day, on hour boundaries from an hour up).
package struct BacktestStream {
    /// Attempts a slice aims at.
    package static let targetRows = 60_000

    /// Streams `[since, until)` through `accumulator`.
    ///
    /// - Parameters:
    ///   - queries: Every velocity query of the two rulesets.
    ///   - useRecorded: Take the values attempts recorded; false counts every value.
    ///   - limit: The most attempts; past it ``BacktestHistory/TooMany`` (counted over the window).
    ///   - changed: Given each slice's changed attempts (the accumulator must collect them).
    ///   - cancelled: Checked between slices and history pages; true throws ``HistoryBacktest/Cancelled``.
    /// - Throws: ``PostgresError``, ``BacktestHistory/BadAttempt``, ``BacktestHistory/TooMany``,
    ///   ``HistoryBacktest/Cancelled``.
    package static func run(
        since: Date, until: Date, queries: [VelocityQuery], useRecorded: Bool, limit: Int,
        accumulator: inout Backtest.Accumulator, connections: [PostgresConnection], cache: BacktestWindowCache?,
        now: Date, changed: (([HistoryBacktest.ChangedRow]) -> Void)?, cancelled: () -> Bool,
        progress: (HistoryBacktest.Progress) -> Void,
        log: (String) -> Void
    ) throws {
        // Velocity history is kept only for the queries some attempt did not record a value for,
        // from the slice where the first such attempt is: that group's window before the slice is
        // read then (by time, in the same snapshot), and the group is kept from there on.
        var velocity = SlidingVelocity(queries: [])
        let names = queries.contains { $0.metric == .distinctNames }
        let span = max(until.timeIntervalSince(since), 1)
        // Kept hours only for a window the cache keeps whole (a window over years, of few attempts,
        // is read as without a cache and does not fill it with empty hours).
        let cache = BacktestWindowCache.keptHours(since: since, until: until, now: now) == nil ? nil : cache
        var hours = (kept: 0, all: 0, counted: false)
        var attemptCoverage: [VelocityKey: Coverage] = [:]
        var start = since
        var length: TimeInterval = 3_600
        var total = 0
        while start < until {
            if cancelled() { throw HistoryBacktest.Cancelled() }
            let end = sliceEnd(from: start, length: length, until: until)
            velocity.evict(before: start, slack: 0.125)
            var recorded = RecordedVelocity(queries: useRecorded ? queries : [])
            let window = try BacktestHistory.readAttempts(
                since: start, until: end, recorded: &recorded, useRecorded: useRecorded, limit: limit - total,
                connections: connections, cache: useRecorded ? cache : nil, now: now, progress: { _ in },
                hours: { kept, read in hours = (hours.kept + kept, hours.all + kept + read, true) })
            let missing = queries.enumerated().filter { column, query in
                !velocity.counts(query)
                    && window.attempts.indices.contains { row in
                        window.attempts[row].subject.id(for: query.key) != nil
                            && (!useRecorded || recorded.value(row: row, column: column) == nil)
                    }
            }.map(\.element)
            let reset = velocity.include(missing)
            // Attempt groups start covering every id from this slice on; an id's earlier attempts
            // are read when an attempt of it needs them (below). The other kinds' new groups are
            // fed their window before the slice at once, by time (their tables are small).
            for group in reset where group.kind == .attempt {
                attemptCoverage[group.key] = Coverage(from: start, seconds: group.seconds)
            }
            for kind in VelocityEvent.Kind.allCases where kind != .attempt {
                let groups = reset.filter { $0.kind == kind }
                guard let seconds = groups.map(\.seconds).max() else { continue }
                var rows = 0
                try readEvents(
                    kind: kind, names: false, from: start.addingTimeInterval(-Double(seconds)), to: start,
                    connection: connections[0]
                ) { event in
                    for group in groups { velocity.add(event, under: group.key) }
                    rows += 1
                    return rows % 50_000 != 0 || !cancelled()
                }
                if cancelled() { throw HistoryBacktest.Cancelled() }
                log(
                    "backtest: \(rows) \(kind.rawValue) history rows by \(groups.map(\.key.rawValue).joined(separator: ", "))"
                        + " for values not recorded, \(seconds) s before \(ChangedAttemptsCSV.timestamp(start))")
            }
            try coverAttempts(
                of: window.attempts, recorded: recorded, useRecorded: useRecorded, queries: queries, start: start,
                end: end, names: names, coverage: &attemptCoverage, velocity: &velocity, connection: connections[0],
                cancelled: cancelled, log: log)
            for kind in VelocityEvent.Kind.allCases where kind != .attempt {
                guard VelocityKey.allCases.contains(where: { velocity.reads(kind, by: $0) }) else { continue }
                try readEvents(kind: kind, names: false, from: start, to: end, connection: connections[0]) { event in
                    velocity.add(event)
                    return true
                }
            }
            // The slice's attempts join the history first: a value as of an attempt counts only
            // what is strictly earlier, so the later ones of the slice are not counted.
            if !velocity.attemptKeys.isEmpty {
                for row in window.attempts.indices {
                    velocity.add(
                        VelocityEvent(
                            kind: .attempt, time: window.attempts[row].time,
                            cardID: window.attempts[row].subject.cardID,
                            deviceID: window.attempts[row].subject.deviceID,
                            customerID: window.attempts[row].subject.customerID, cardholderName: window.names[row]))
                }
            }
            let changes = accumulator.add(
                window.attempts, window.attempts.indices, recorded: useRecorded ? recorded : nil, history: velocity)
            if let changed, !changes.isEmpty {
                changed(try details(of: changes, connection: connections[0]))
            }
            total += window.attempts.count
            let rate = Double(window.attempts.count) / max(end.timeIntervalSince(start), 1)
            length = min(86_400, max(60, Double(targetRows) / max(rate, 1e-9)))
            start = end
            if end >= until, hours.counted {
                log("backtest: \(hours.kept) of \(hours.all) complete hours already parsed")
            }
            progress(
                HistoryBacktest.Progress(
                    replayed: total, through: end, fraction: min(1, end.timeIntervalSince(since) / span),
                    historyEvents: velocity.eventCount, historyKeys: velocity.keyCount))
        }
    }

    /// How far back an attempt group holds every id's attempts (`from`), and the ids read further
    /// back one by one (`loaded`, down to their own window): until the group has been kept for a
    /// whole window, after which it is dropped.
    struct Coverage {
        var from: Date
        var seconds: Int
        var loaded: Set<String> = []
    }

    /// Reads the attempts before each group's coverage that this slice's values counted from
    /// history need: for the ids not read yet, through their key's index (`attempts_card_time`
    /// and the like), or by time alone for every id when they are many (as many ids, times 4, as
    /// the range is expected to hold rows: the list would cost more to send and plan than the
    /// rows it filters).
    static func coverAttempts(
        of attempts: [AttemptLog.Attempt], recorded: RecordedVelocity, useRecorded: Bool, queries: [VelocityQuery],
        start: Date, end: Date, names: Bool, coverage: inout [VelocityKey: Coverage], velocity: inout SlidingVelocity,
        connection: PostgresConnection, cancelled: () -> Bool, log: (String) -> Void
    ) throws {
        for key in VelocityKey.allCases {
            guard var covered = coverage[key] else { continue }
            let needFrom = start.addingTimeInterval(-Double(covered.seconds))
            guard needFrom < covered.from else {
                coverage[key] = nil  // every id's window is held from here on
                continue
            }
            // The ids of this slice's attempts with a value of this group not recorded.
            let columns = queries.indices.filter {
                queries[$0].metric.eventKind == .attempt && queries[$0].key == key && velocity.counts(queries[$0])
            }
            var ids = Set<String>()
            for row in attempts.indices {
                guard let id = attempts[row].subject.id(for: key), !covered.loaded.contains(id) else { continue }
                if !useRecorded || columns.contains(where: { recorded.value(row: row, column: $0) == nil }) {
                    ids.insert(id)
                }
            }
            guard !ids.isEmpty else { continue }
            let rate = Double(attempts.count) / max(end.timeIntervalSince(start), 1)
            let expected = rate * covered.from.timeIntervalSince(needFrom)
            var rows = 0
            let byTime = Double(ids.count) * 4 >= expected
            func read(_ event: VelocityEvent) -> Bool {
                velocity.add(event, under: key)
                rows += 1
                return rows % 50_000 != 0 || !cancelled()
            }
            if byTime {
                try readEvents(kind: .attempt, names: names, from: needFrom, to: covered.from, connection: connection) {
                    event in
                    // Every id: those already read one by one hold these attempts already.
                    guard let id = event.id(for: key), !covered.loaded.contains(id) else { return true }
                    return read(event)
                }
                coverage[key] = nil
            } else {
                try readAttempts(
                    key: key, ids: ids.sorted(), names: names, from: needFrom, to: covered.from, connection: connection,
                    event: read)
                covered.loaded.formUnion(ids)
                coverage[key] = covered
            }
            if cancelled() { throw HistoryBacktest.Cancelled() }
            log(
                "backtest: \(rows) attempt history rows by \(key.rawValue) for values not recorded, before "
                    + "\(ChangedAttemptsCSV.timestamp(covered.from)) (\(byTime ? "every id, by time" : "\(ids.count) ids"))"
            )
        }
    }

    /// The attempts of `ids` (of `key`) in `[start, end)`, through the key's index.
    static func readAttempts(
        key: VelocityKey, ids: [String], names: Bool, from start: Date, to end: Date, connection: PostgresConnection,
        event: (VelocityEvent) -> Bool
    ) throws {
        let column = key.rawValue + "_id"  // card_id, device_id, customer_id: a fixed set
        let query: PostgresQuery = """
            DECLARE issuerd_backtest_events NO SCROLL CURSOR FOR
            SELECT a.created_at, a.card_id, a.device_id, a.customer_id,
                   \(unsafeSQL: names ? "a.cardholder_name_hash" : "NULL::text")
            FROM provisioning_attempts a
            WHERE a.\(unsafeSQL: column) = ANY(\(ids)) AND a.created_at >= \(start) AND a.created_at < \(end)
            """
        try BacktestHistory.stream(query, cursor: "issuerd_backtest_events", connection: connection) { row in
            event(
                VelocityEvent(
                    kind: .attempt, time: try row.decode(0), cardID: try row.decode(1), deviceID: try row.decode(2),
                    customerID: try row.decode(3), cardholderName: try row.decode(4)))
        }
    }

    /// The end of the slice from `start` of about `length` seconds: on an hour boundary when it
    /// is an hour or more (kept hours are whole), never past `until`.
    static func sliceEnd(from start: Date, length: TimeInterval, until: Date) -> Date {
        var end = start.addingTimeInterval(length)
        if length >= 3_600 {
            let hour = (end.timeIntervalSince1970 / 3_600).rounded(.down) * 3_600
            if hour > start.timeIntervalSince1970 { end = Date(timeIntervalSince1970: hour) }
        }
        return min(end, until)
    }

    /// The channel column and the card's last four digits of each changed attempt (one query).
    private static func details(
        of changes: [Backtest.ChangedAttempt], connection: PostgresConnection
    ) throws -> [HistoryBacktest.ChangedRow] {
        let ids = changes.map(\.attemptID)
        var found: [String: (channel: String, lastFour: String?)] = [:]
        for row in try connection.query(
            """
            SELECT a.attempt_id::text AS id, a.channel, c.last_four
            FROM provisioning_attempts a LEFT JOIN cards c ON c.card_id = a.card_id
            WHERE a.attempt_id = ANY(\(ids)::uuid[])
            """)
        {
            found[try row.decode("id")] = (try row.decode("channel"), try row.decode("last_four"))
        }
        return changes.map { change in
            let stored = found[change.attemptID.lowercased()]
            return HistoryBacktest.ChangedRow(change: change, channel: stored?.channel, lastFour: stored?.lastFour)
        }
    }

    /// The events of `kind` in `[start, end)`, by time alone, each with every key it carries
    /// (as ``HistoryExport`` defines them: a failure has no device; a token deletion's card is its
    /// own or its token's, its device the token's, its customer the card's). Attempts come
    /// through the `attempts_time_keys` index (sql/0017), with their cardholder name hash only
    /// with `names`; failures and deletions through their time indexes (sql/0024).
    static func readEvents(
        kind: VelocityEvent.Kind, names: Bool, from start: Date, to end: Date, connection: PostgresConnection,
        event: (VelocityEvent) -> Bool
    ) throws {
        let query: PostgresQuery
        switch kind {
        case .attempt:
            query = """
                DECLARE issuerd_backtest_events NO SCROLL CURSOR FOR
                SELECT a.created_at, a.card_id, a.device_id, a.customer_id,
                       \(unsafeSQL: names ? "a.cardholder_name_hash" : "NULL::text")
                FROM provisioning_attempts a
                WHERE a.created_at >= \(start) AND a.created_at < \(end) AND \(unsafeSQL: BacktestHistory.timeKeysPredicate)
                """
        case .otpFailure, .stepUpFailure:
            let kinds = kind == .otpFailure ? ["wrong_code"] : ["locked", "expired"]
            query = """
                DECLARE issuerd_backtest_events NO SCROLL CURSOR FOR
                SELECT f.at, f.card_id, NULL::text, f.customer_id, NULL::text
                FROM challenge_failures f
                WHERE f.at >= \(start) AND f.at < \(end) AND f.kind = ANY(\(kinds))
                """
        case .tokenDeletion:
            query = """
                DECLARE issuerd_backtest_events NO SCROLL CURSOR FOR
                SELECT e.at, coalesce(e.card_id, t.card_id), t.device_id, c.customer_id, NULL::text
                FROM token_events e
                LEFT JOIN tokens t ON t.token_reference = e.token_reference
                LEFT JOIN cards c ON c.card_id = coalesce(e.card_id, t.card_id)
                WHERE e.event = 'deleted' AND e.at >= \(start) AND e.at < \(end)
                """
        }
        try BacktestHistory.stream(query, cursor: "issuerd_backtest_events", connection: connection) { row in
            event(
                VelocityEvent(
                    kind: kind, time: try row.decode(0), cardID: try row.decode(1), deviceID: try row.decode(2),
                    customerID: try row.decode(3), cardholderName: try row.decode(4)))
        }
    }
}
