import Dispatch
import Foundation
import IssuerdPostgres
import IssuerdRisk

/// A backtest that reads its window in time order, one slice at a time, in one snapshot, and
/// keeps of it only the tallies (``Backtest/Accumulator``) and the velocity history the rules'
/// longest windows can still reach (``SlidingVelocity``): its memory is bounded by one slice's
/// attempts (two while the next is read) and the keys active within those windows, not by the
/// length of the window.
///
/// Each slice: its attempts (read, parsed and sorted as ``BacktestHistory`` reads a window,
/// through the ``BacktestWindowCache`` when there is one; on the second connection and later
/// ones, on a thread of their own, while the slice before is replayed); for a query some of them
/// did not record a value for, and whose history is not kept yet, the history of its (event kind,
/// key) over its window before the slice, read by time, kept from then on; the other events of
/// the slice's time range; then the attempts join the history and are replayed on every core.
/// When every attempt recorded every value, no history is read or kept. A slice covers about
/// ``targetRows`` attempts, its length set from the rate of the one before (between a minute and
/// a day, on hour boundaries from an hour up).
package struct BacktestStream {
    /// Attempts a slice aims at.
    package static let targetRows = 60_000

    /// Streams `[since, until)` through `accumulator`.
    ///
    /// - Parameters:
    ///   - queries: Every velocity query of the two rulesets.
    ///   - useRecorded: Take the values attempts recorded; false counts every value.
    ///   - limit: The most attempts; past it ``BacktestHistory/TooMany`` (counted over the window).
    ///   - labels: The outcomes of the window's attempts, in time order
    ///     (``HistoryBacktest/outcomeLabels(since:until:connection:)``): each slice gives the
    ///     accumulator those of its attempts.
    ///   - changed: Given each slice's changed attempts (the accumulator must collect them).
    ///   - cancelled: Checked between slices and history pages; true throws ``HistoryBacktest/Cancelled``.
    /// - Throws: ``PostgresError``, ``BacktestHistory/BadAttempt``, ``BacktestHistory/TooMany``,
    ///   ``HistoryBacktest/Cancelled``.
    package static func run(
        since: Date, until: Date, queries: [VelocityQuery], useRecorded: Bool, limit: Int,
        accumulator: inout Backtest.Accumulator, labels: [HistoryBacktest.OutcomeLabel] = [],
        connections: [PostgresConnection], cache: BacktestWindowCache?,
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
        var total = 0
        var cards = CardDigits()
        var nextLabel = 0
        // With a second connection, the slices are read on it (and on a third, when there is one)
        // by a thread of their own, up to ``readAhead`` slices ahead of the one being replayed: the
        // reading connections never run the history's queries, which keep to the first.
        let readers = connections.count > 1 ? Array(connections.dropFirst()) : connections
        let reader = SliceReader(
            since: since, until: until, limit: limit, ahead: connections.count > 1 ? readAhead : 0
        ) { start, end, limit in
            var hours: (kept: Int, read: Int)?
            let window = try BacktestHistory.readAttempts(
                since: start, until: end, queries: useRecorded ? queries : [], useRecorded: useRecorded, limit: limit,
                connections: readers,
                cache: useRecorded ? cache : nil, now: now, progress: { _ in },
                hours: { kept, read in hours = (kept, read) })
            return Slice(start: start, end: end, window: window, hours: hours)
        }
        // Stopped and waited for however this returns (an error, a cancel): its connections are
        // the caller's.
        defer { reader.stop() }
        while let slice = try reader.next() {
            if cancelled() { throw HistoryBacktest.Cancelled() }
            let (start, end, window) = (slice.start, slice.end, slice.window)
            if let counted = slice.hours {
                hours = (hours.kept + counted.kept, hours.all + counted.kept + counted.read, true)
            }
            velocity.evict(before: start, slack: 0.125)
            let missing = queries.enumerated().filter { column, query in
                !velocity.counts(query)
                    && window.pages.contains { page in
                        // The recorded value first: reading the id copies a string.
                        page.attempts.indices.contains { row in
                            (!useRecorded || page.recorded.value(row: row, column: column) == nil)
                                && page.attempts[row].subject.id(for: query.key) != nil
                        }
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
                of: window.pages, count: window.count, useRecorded: useRecorded, queries: queries, start: start,
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
                // Each attempt's fields read in place (`page.attempts[row].time` copied the whole
                // attempt, retaining and releasing its every string, for each field).
                var events: [VelocityEvent] = []
                events.reserveCapacity(window.count)
                for page in window.pages {
                    page.attempts.withUnsafeBufferPointer { attempts in
                        for row in attempts.indices {
                            events.append(
                                VelocityEvent(
                                    kind: .attempt, time: attempts[row].time, cardID: attempts[row].subject.cardID,
                                    deviceID: attempts[row].subject.deviceID,
                                    customerID: attempts[row].subject.customerID, cardholderName: page.names[row]))
                        }
                    }
                }
                velocity.add(contentsOf: events)
            }
            // The slice's labelled attempts, each found in its order by time and id.
            var labelled: [Backtest.Labelled] = []
            while nextLabel < labels.count, labels[nextLabel].time < end {
                let outcome = labels[nextLabel]
                if outcome.time >= start, let index = window.index(of: outcome.attemptID, at: outcome.time) {
                    labelled.append(Backtest.Labelled(index: index, label: outcome.label))
                }
                nextLabel += 1
            }
            labelled.sort { $0.index < $1.index }
            let changes = accumulator.add(
                pages: window.pages.map(\.attempts), recorded: useRecorded ? window.pages.map(\.recorded) : nil,
                order: window.order, history: velocity, labels: labelled)
            if let changed, !changes.isEmpty {
                changed(try details(of: changes, cards: &cards, connection: connections[0]))
            }
            total += window.count
            if end >= until, hours.counted {
                log("backtest: \(hours.kept) of \(hours.all) complete hours already parsed")
            }
            progress(
                HistoryBacktest.Progress(
                    replayed: total, through: end, fraction: min(1, end.timeIntervalSince(since) / span),
                    historyEvents: velocity.eventCount, historyKeys: velocity.keyCount))
        }
    }

    /// How many slices are read ahead of the one being replayed, at most (each about
    /// ``targetRows`` parsed attempts held). Two were no faster than one on two cores: the
    /// replay and the read share them.
    static let readAhead = 1

    /// A slice's attempts in the pages they were read in (each with its cardholder name hashes
    /// and recorded values), and their order by time.
    struct Slice {
        var start: Date
        var end: Date
        var window: BacktestHistory.Window
        /// The complete hours of the slice found in the cache and read, when it was looked in.
        var hours: (kept: Int, read: Int)?
    }

    /// Reads `[since, until)` one slice after another, each about ``targetRows`` attempts long
    /// from the rate of the one before (``sliceEnd(from:length:until:)``, the first an hour), no
    /// more than `limit` attempts in all: with `ahead` > 0 on a thread of its own, up to `ahead`
    /// slices ahead of ``next()``; with 0, each when ``next()`` asks.
    ///
    /// @unchecked Sendable: its state is shared under the lock of `condition`; the reading closure
    /// runs on one thread at a time (the reader's, or the caller's when not ahead), and the
    /// connections it reads on are used by nothing else until ``stop()`` returns.
    final class SliceReader: @unchecked Sendable {
        typealias Read = (_ start: Date, _ end: Date, _ limit: Int) throws -> Slice

        private let until: Date
        private let ahead: Int
        private let read: Read
        private let condition = NSCondition()
        // Under `condition`:
        private var ready: [Slice] = []
        private var failure: (any Error)?
        private var finished = false
        private var stopping = false
        private var running = false
        // The reading position (the reader's thread only, or the caller's when not ahead):
        private var start: Date
        private var length: TimeInterval = 3_600
        private var left: Int

        init(since: Date, until: Date, limit: Int, ahead: Int, read: @escaping Read) {
            self.until = until
            self.ahead = ahead
            self.read = read
            start = since
            left = limit
            guard since < until else {
                finished = true
                return
            }
            guard ahead > 0 else { return }
            running = true
            let thread = Thread { [self] in readAll() }
            thread.name = "issuerd-backtest-read"
            thread.start()
        }

        /// Reads the next slice, or nil past `until`.
        private func readOne() throws -> Slice? {
            guard start < until else { return nil }
            let end = BacktestStream.sliceEnd(from: start, length: length, until: until)
            let slice = try read(start, end, left)
            left -= slice.window.count
            let rate = Double(slice.window.count) / max(end.timeIntervalSince(start), 1)
            length = min(86_400, max(60, Double(BacktestStream.targetRows) / max(rate, 1e-9)))
            start = end
            return slice
        }

        /// The reader's thread: reads until the end, an error or ``stop()``.
        private func readAll() {
            defer {
                condition.lock()
                running = false
                finished = true
                condition.broadcast()
                condition.unlock()
            }
            while true {
                condition.lock()
                while ready.count >= ahead, !stopping { condition.wait() }
                let stop = stopping
                condition.unlock()
                if stop { return }
                do {
                    guard let slice = try readOne() else { return }
                    condition.lock()
                    ready.append(slice)
                    condition.broadcast()
                    condition.unlock()
                } catch {
                    condition.lock()
                    failure = error
                    condition.unlock()
                    return
                }
            }
        }

        /// The next slice in time order; nil after the last; rethrows the read's error.
        func next() throws -> Slice? {
            guard ahead > 0 else { return try readOne() }
            condition.lock()
            defer { condition.unlock() }
            while ready.isEmpty, failure == nil, !finished { condition.wait() }
            if !ready.isEmpty {
                condition.broadcast()
                return ready.removeFirst()
            }
            if let failure { throw failure }
            return nil
        }

        /// Stops reading ahead and waits until the reader's thread has let go of its connections.
        func stop() {
            condition.lock()
            stopping = true
            condition.broadcast()
            while running { condition.wait() }
            ready.removeAll()
            condition.unlock()
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
        of pages: [BacktestHistory.Page], count: Int, useRecorded: Bool, queries: [VelocityQuery],
        start: Date, end: Date, names: Bool, coverage: inout [VelocityKey: Coverage], velocity: inout SlidingVelocity,
        connection: PostgresConnection, cancelled: () -> Bool, log: (String) -> Void
    ) throws {
        for key in VelocityKey.allCases {
            // Taken out while it changes: a copy left in `coverage` shared `loaded`, and adding to
            // it copied the whole set (every id read so far) each slice.
            guard var covered = coverage.removeValue(forKey: key) else { continue }
            let needFrom = start.addingTimeInterval(-Double(covered.seconds))
            // Past this, every id's window is held from here on (it stays out of `coverage`).
            guard needFrom < covered.from else { continue }
            // The ids of this slice's attempts with a value of this group not recorded.
            let columns = queries.indices.filter {
                queries[$0].metric.eventKind == .attempt && queries[$0].key == key && velocity.counts(queries[$0])
            }
            var ids = Set<String>()
            for page in pages {
                for row in page.attempts.indices {
                    guard let id = page.attempts[row].subject.id(for: key), !covered.loaded.contains(id) else {
                        continue
                    }
                    if !useRecorded || columns.contains(where: { page.recorded.value(row: row, column: $0) == nil }) {
                        ids.insert(id)
                    }
                }
            }
            guard !ids.isEmpty else {
                coverage[key] = covered
                continue
            }
            let rate = Double(count) / max(end.timeIntervalSince(start), 1)
            let expected = rate * covered.from.timeIntervalSince(needFrom)
            var rows = 0
            let byTime = Double(ids.count) * 4 >= expected
            // Added in batches, on every core (``SlidingVelocity/add(contentsOf:under:)``).
            var batch: [VelocityEvent] = []
            func read(_ event: VelocityEvent) -> Bool {
                batch.append(event)
                rows += 1
                guard rows % 20_000 == 0 else { return true }
                velocity.add(contentsOf: batch, under: key)
                batch.removeAll(keepingCapacity: true)
                return rows % 60_000 != 0 || !cancelled()
            }
            defer { velocity.add(contentsOf: batch, under: key) }
            if byTime {
                try readEvents(kind: .attempt, names: names, from: needFrom, to: covered.from, connection: connection) {
                    event in
                    // Every id: those already read one by one hold these attempts already.
                    guard let id = event.id(for: key), !covered.loaded.contains(id) else { return true }
                    return read(event)
                }
            } else {
                // In any order: the list is a set to PostgreSQL, and sorting the strings cost
                // more than reading them.
                try readAttempts(
                    key: key, ids: Array(ids), names: names, from: needFrom, to: covered.from, connection: connection,
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

    /// Cards' last four digits by card id, looked up once for the changed attempts of every
    /// slice; emptied when it holds ``capacity`` ids (a quarter's changes touch many cards).
    struct CardDigits {
        static let capacity = 500_000
        var lastFour: [String: String?] = [:]
    }

    /// The channel and the card's last four digits of each changed attempt. The channel is the
    /// one its inputs recorded (`request.channel`, which every attempt stores with the value of
    /// its `channel` column), else read from the column; the last four from `cards`, for the card
    /// ids not looked up before. (Reading each attempt back by id, as this did, cost PostgreSQL
    /// more than the rest of the export.)
    static func details(
        of changes: [Backtest.ChangedAttempt], cards: inout CardDigits, connection: PostgresConnection
    ) throws -> [HistoryBacktest.ChangedRow] {
        var channels: [String: String] = [:]
        let unnamed = changes.filter { $0.channel == nil }.map(\.attemptID)
        if !unnamed.isEmpty {
            for row in try connection.query(
                "SELECT attempt_id::text AS id, channel FROM provisioning_attempts WHERE attempt_id = ANY(\(unnamed)::uuid[])"
            ) {
                channels[try row.decode("id")] = try row.decode("channel")
            }
        }
        if cards.lastFour.count >= CardDigits.capacity { cards.lastFour.removeAll(keepingCapacity: true) }
        let unknown = Set(changes.compactMap(\.cardID).filter { cards.lastFour[$0] == nil })
        if !unknown.isEmpty {
            for id in unknown { cards.lastFour[id] = .some(nil) }  // no such card: no digits
            for row in try connection.query(
                "SELECT card_id, last_four FROM cards WHERE card_id = ANY(\(Array(unknown)))")
            {
                cards.lastFour[try row.decode("card_id")] = .some(try row.decode("last_four"))
            }
        }
        return changes.map { change in
            HistoryBacktest.ChangedRow(
                change: change, channel: change.channel ?? channels[change.attemptID.lowercased()],
                lastFour: change.cardID.flatMap { cards.lastFour[$0] ?? nil })
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
