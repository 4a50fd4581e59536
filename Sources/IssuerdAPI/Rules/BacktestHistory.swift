import Dispatch
import Foundation
import IssuerdPostgres
import IssuerdRisk
import Synchronization

/// What ``HistoryBacktest`` replays, read from PostgreSQL rows straight into the replay's types
/// (no JSON Lines text in between; `issuerd rules export` and `rules backtest FILE` keep that
/// format, through ``HistoryExport`` and `AttemptLog`).
///
/// - every attempt of `[since, until)` with its attributes (the same ones the export writes)
///   and, for each velocity query of the two rulesets, the value its decision recorded in
///   `features` (``RecordedVelocity``);
/// - history only where a value must be counted: for each query some replayed attempt has no
///   recorded value for, the events of that query's kind and key for those attempts' ids, within
///   the query's window before `since` (attempts) or before `until` (the other events). Replayed
///   attempts count as history for the later ones whatever their keys.
///
/// Run it inside one REPEATABLE READ transaction (it reads through cursors).
struct BacktestHistory {
    /// The attempts to replay, in time order.
    var attempts: [AttemptLog.Attempt] = []
    /// Their recorded values (nil: every value counted from history).
    var recorded: RecordedVelocity?
    /// The history read (the replayed attempts included).
    var history = InMemoryVelocityProvider(events: [])
    /// History rows read, per kind and key, for the progress lines and the docs' figures.
    var historyRows: [String: Int] = [:]

    /// Rows fetched per round trip: small enough that parsing a page overlaps fetching the next.
    static let fetchSize = 4_000

    /// A stored attempt whose attributes cannot be replayed.
    struct BadAttempt: Error, Sendable {
        var id: String
        var message: String
    }

    /// Reads the replay's input.
    ///
    /// - Parameters:
    ///   - queries: Every velocity query of the rulesets, deduplicated.
    ///   - useRecorded: Whether recorded values are used; `false` counts every value from history.
    /// - Throws: ``PostgresError``, or ``BadAttempt``.
    static func read(since: Date, until: Date, queries: [VelocityQuery], useRecorded: Bool, limit: Int, connection: PostgresConnection,
                     progress: (String) -> Void) throws -> BacktestHistory {
        var result = BacktestHistory()
        var recorded = RecordedVelocity(queries: useRecorded ? queries : [])
        let window = try readAttempts(since: since, until: until, recorded: &recorded, useRecorded: useRecorded, limit: limit,
                                      connection: connection, progress: progress)
        result.attempts = window.map(\.0)
        result.recorded = useRecorded ? recorded : nil
        progress("backtest: \(window.count) attempts to replay")

        // Which ids each (event kind, key) must be read for, and how far back.
        struct Group: Hashable {
            var kind: VelocityEvent.Kind
            var key: VelocityKey
        }
        var needs: [Group: (ids: Set<String>, lookback: Int)] = [:]
        for (column, query) in queries.enumerated() {
            var ids = Set<String>()
            for (row, attempt) in result.attempts.enumerated() {
                guard let id = attempt.subject.id(for: query.key) else { continue }  // unknown either way
                if useRecorded, recorded.value(row: row, column: column) != nil { continue }
                ids.insert(id)
            }
            guard !ids.isEmpty else { continue }
            let group = Group(kind: query.metric.eventKind, key: query.key)
            needs[group] = (needs[group, default: ([], 0)].ids.union(ids), max(needs[group]?.lookback ?? 0, query.windowSeconds))
        }
        // The window's attempts count for the later ones, under the keys a counted value reads.
        var keyed: [(key: VelocityKey, event: VelocityEvent)] = []
        for key in VelocityKey.allCases where needs[Group(kind: .attempt, key: key)] != nil {
            for (attempt, name) in window {
                keyed.append((key, VelocityEvent(kind: .attempt, time: attempt.time, cardID: attempt.subject.cardID,
                                                 deviceID: attempt.subject.deviceID, customerID: attempt.subject.customerID,
                                                 cardholderName: name)))
            }
        }
        for kind in VelocityEvent.Kind.allCases {
            for key in VelocityKey.allCases {
                guard let need = needs[Group(kind: kind, key: key)], need.lookback > 0 else { continue }
                let start = since.addingTimeInterval(-Double(need.lookback))
                let before = keyed.count
                try readHistory(kind: kind, key: key, ids: need.ids.sorted(), from: start, since: since, until: until,
                                connection: connection) { keyed.append((key, $0)) }
                result.historyRows["\(kind.rawValue) by \(key.rawValue)"] = keyed.count - before
                progress("backtest: \(keyed.count - before) \(kind.rawValue) history rows for \(need.ids.count) \(key.rawValue) ids")
            }
        }
        result.history = InMemoryVelocityProvider(events: [], keyed: keyed)
        return result
    }

    /// The attempts of the window, in the export's order (time, then id). The JSON columns come
    /// as stored and are parsed here: extracting them in SQL (`jsonb_each`, a lookup per query)
    /// cost PostgreSQL ~45 µs a row, five times the parse. Each page is decoded and parsed on
    /// another core while the next one is fetched; all are done before this returns.
    private static func readAttempts(since: Date, until: Date, recorded: inout RecordedVelocity, useRecorded: Bool, limit: Int,
                                     connection: PostgresConnection, progress: (String) -> Void) throws -> [(AttemptLog.Attempt, String?)] {
        let query: PostgresQuery = """
            DECLARE issuerd_backtest_attempts NO SCROLL CURSOR FOR
            SELECT a.attempt_id::text, a.created_at, a.card_id, a.device_id, a.customer_id, a.cardholder_name_hash,
                   a.inputs::text, CASE WHEN \(useRecorded) THEN a.features::text ELSE '{}' END
            FROM provisioning_attempts a
            WHERE a.created_at >= \(since) AND a.created_at < \(until)
            """
        let queries = recorded.queries
        let pages = Mutex<[Int: Result<Page, Error>]>([:])
        let group = DispatchGroup()
        var pageCount = 0
        var rowCount = 0
        // No count(*) first: a second scan of the window. Only a window over the limit is counted.
        let complete: Bool
        do {
            defer { group.wait() }
            complete = try streamPages(query, cursor: "issuerd_backtest_attempts", connection: connection) { rows in
                let index = pageCount
                pageCount += 1
                rowCount += rows.count
                if rowCount / 50_000 > (rowCount - rows.count) / 50_000 { progress("backtest: \(rowCount) attempts read") }
                guard rowCount <= limit else { return false }
                group.enter()
                DispatchQueue.global().async {
                    let page = Result { try Page(rows, queries: queries, useRecorded: useRecorded) }
                    pages.withLock { $0[index] = page }
                    group.leave()
                }
                return true
            }
        }
        if !complete {
            throw TooMany(found: try HistoryExport(since: since, until: until, lookbackSeconds: 0).attemptCount(connection: connection))
        }
        var parsed: [Page] = []
        try pages.withLock { pages in
            for index in 0..<pageCount { if let page = pages[index] { parsed.append(try page.get()) } }
        }
        // Sorted here rather than by PostgreSQL, whose sort of the wide rows spilled to disk.
        var order: [(page: Int, row: Int)] = []
        order.reserveCapacity(rowCount)
        for (page, content) in parsed.enumerated() { for row in content.attempts.indices { order.append((page, row)) } }
        order.sort { a, b in
            let left = parsed[a.page].attempts[a.row].0, right = parsed[b.page].attempts[b.row].0
            return (left.time, left.id) < (right.time, right.id)
        }
        var attempts: [(AttemptLog.Attempt, String?)] = []
        attempts.reserveCapacity(order.count)
        for (line, position) in order.enumerated() {
            var (attempt, name) = parsed[position.page].attempts[position.row]
            attempt.line = line + 1
            attempts.append((attempt, name))
            if useRecorded { recorded.append(parsed[position.page].recorded.row(position.row)) }
        }
        return attempts
    }

    /// One fetched page of window attempts, decoded and parsed.
    private struct Page: Sendable {
        var attempts: [(AttemptLog.Attempt, String?)] = []
        var recorded: RecordedVelocity

        init(_ rows: PostgresRows, queries: [VelocityQuery], useRecorded: Bool) throws {
            recorded = RecordedVelocity(queries: queries)
            attempts.reserveCapacity(rows.count)
            for row in rows {
                let id: String = try row.decode(0)
                let time: Date = try row.decode(1)
                let input: RiskInput
                switch AttemptLog.input(storedInputs: try row.decode(6), time: time) {
                case .success(let value): input = value
                case .failure(let error): throw BadAttempt(id: id, message: error.message)
                }
                if useRecorded { recorded.append(storedFeatures: try row.decode(7)) }
                let subject = VelocitySubject(cardID: try row.decode(2), deviceID: try row.decode(3), customerID: try row.decode(4))
                attempts.append((AttemptLog.Attempt(id: id, time: time, subject: subject, input: input, line: 0), try row.decode(5)))
            }
        }
    }

    /// The events of `kind` whose `key` id is one of `ids`, in `[from, since)` for attempts
    /// (those of the window are already read) and `[from, until)` for the others, as the export
    /// defines them (``HistoryExport``).
    private static func readHistory(kind: VelocityEvent.Kind, key: VelocityKey, ids: [String], from start: Date, since: Date,
                                    until: Date, connection: PostgresConnection, event: (VelocityEvent) -> Void) throws {
        let column = key.rawValue + "_id"  // card_id, device_id, customer_id: a fixed set
        let query: PostgresQuery
        switch kind {
        case .attempt:
            query = """
                DECLARE issuerd_backtest_history NO SCROLL CURSOR FOR
                SELECT a.created_at, a.card_id, a.\(unsafeSQL: column), a.cardholder_name_hash
                FROM provisioning_attempts a
                WHERE a.\(unsafeSQL: column) = ANY(\(ids)) AND a.created_at >= \(start) AND a.created_at < \(since)
                """
        case .otpFailure, .stepUpFailure:
            guard key != .device else { return }  // failures carry no device
            let kinds = kind == .otpFailure ? ["wrong_code"] : ["locked", "expired"]
            query = """
                DECLARE issuerd_backtest_history NO SCROLL CURSOR FOR
                SELECT f.at, f.card_id, f.\(unsafeSQL: column), NULL::text
                FROM challenge_failures f
                WHERE f.\(unsafeSQL: column) = ANY(\(ids)) AND f.kind = ANY(\(kinds)) AND f.at >= \(start) AND f.at < \(until)
                """
        case .tokenDeletion:
            // A deletion's card is its own or its token's, its device the token's, its customer
            // the card's. Candidates come through the deletions index by card and the tokens of
            // the key's cards or devices; the last condition is exact.
            let keyExpression = switch key {
            case .card: "coalesce(e.card_id, t.card_id)"
            case .device: "t.device_id"
            case .customer: "c.customer_id"
            }
            query = """
                DECLARE issuerd_backtest_history NO SCROLL CURSOR FOR
                WITH key_cards AS MATERIALIZED (
                    SELECT unnest(\(ids)::text[]) AS card_id WHERE \(key.rawValue) = 'card'
                    UNION
                    SELECT c.card_id FROM cards c WHERE \(key.rawValue) = 'customer' AND c.customer_id = ANY(\(ids))),
                key_tokens AS MATERIALIZED (
                    SELECT t.token_reference FROM tokens t WHERE t.card_id IN (SELECT card_id FROM key_cards)
                    UNION
                    SELECT t.token_reference FROM tokens t WHERE \(key.rawValue) = 'device' AND t.device_id = ANY(\(ids)))
                SELECT e.at, coalesce(e.card_id, t.card_id), \(unsafeSQL: keyExpression), NULL::text
                FROM token_events e
                LEFT JOIN tokens t ON t.token_reference = e.token_reference
                LEFT JOIN cards c ON c.card_id = coalesce(e.card_id, t.card_id)
                WHERE e.id IN (
                    SELECT e.id FROM token_events e
                    WHERE e.event = 'deleted' AND e.card_id IN (SELECT card_id FROM key_cards) AND e.at >= \(start) AND e.at < \(until)
                    UNION
                    SELECT e.id FROM token_events e
                    WHERE e.event = 'deleted' AND e.token_reference IN (SELECT token_reference FROM key_tokens)
                      AND e.at >= \(start) AND e.at < \(until))
                  AND \(unsafeSQL: keyExpression) = ANY(\(ids))
                """
        }
        try stream(query, cursor: "issuerd_backtest_history", connection: connection) { row in
            let id: String? = try row.decode(2)
            let card: String? = try row.decode(1)
            event(VelocityEvent(kind: kind, time: try row.decode(0), cardID: card, deviceID: key == .device ? id : nil,
                                customerID: key == .customer ? id : nil, cardholderName: try row.decode(3)))
            return true
        }
    }

    /// Runs `declare` (a `DECLARE cursor … FOR SELECT …`) and hands over its pages until `page`
    /// returns false; inside a transaction.
    ///
    /// - Returns: False when `page` stopped it.
    private static func streamPages(_ declare: PostgresQuery, cursor: String, connection: PostgresConnection,
                                    page: (PostgresRows) throws -> Bool) throws -> Bool {
        try connection.execute(declare)
        defer { _ = try? connection.execute("CLOSE \(unsafeSQL: cursor)") }
        while true {
            let rows = try connection.query("FETCH FORWARD \(unsafeSQL: String(fetchSize)) FROM \(unsafeSQL: cursor)")
            guard try page(rows) else { return false }
            if rows.count < fetchSize { return true }
        }
    }

    /// Runs `declare` (a `DECLARE cursor … FOR SELECT …`) and hands over its rows until `row`
    /// returns false; inside a transaction.
    ///
    /// - Returns: False when `row` stopped it.
    @discardableResult
    private static func stream(_ declare: PostgresQuery, cursor: String, connection: PostgresConnection,
                               row: (PostgresRow) throws -> Bool) throws -> Bool {
        try connection.execute(declare)
        defer { _ = try? connection.execute("CLOSE \(unsafeSQL: cursor)") }
        while true {
            let rows = try connection.query("FETCH FORWARD \(unsafeSQL: String(fetchSize)) FROM \(unsafeSQL: cursor)")
            for item in rows where try !row(item) { return false }
            if rows.count < fetchSize { return true }
        }
    }

    /// The window holds more attempts than the limit.
    struct TooMany: Error {
        var found: Int
    }
}
