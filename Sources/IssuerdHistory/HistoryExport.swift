import Foundation
import IssuerdPostgres
import IssuerdRisk

/// Stored history as `AttemptLog` JSON Lines (docs/rules.md, "Backtest input"): the one export
/// behind `POST /v1/admin/rules/backtest`, `issuerd rules backtest --since … --until …` and
/// `issuerd rules export`, so an offline backtest sees exactly what the server would replay.
///
/// - attempts of `[since, until)` from `provisioning_attempts` (`inputs` restricted to the
///   rule language's attribute names), replayed;
/// - attempts of `[since − lookback, since)` with `"replay": false`: history only, so velocity
///   at the start of the window counts what came before it;
/// - `otp_failure` from `challenge_failures` (`wrong_code`), `stepup_failure` from
///   `challenge_failures` (`locked`, `expired`), `token_deletion` from `token_events` (`deleted`),
///   all over `[since − lookback, until)`.
///
/// `cardholder_name` carries `cardholder_name_hash`: the name itself is never stored, and
/// distinct hashes of normalised names count the same as distinct names.
///
/// With ``windowKeysOnly`` (the backtest's export) the history lines are only those that can
/// count in the velocity of a replayed attempt: a velocity value reads the events sharing the
/// attempt's card, device or customer id, so an event whose card, device and customer ids all
/// differ from every replayed attempt's is left out. The replay gives the same report; what
/// goes is the rest of the look-back (minutes of reading at 1M attempts). `issuerd rules export`
/// keeps the full export.
public struct HistoryExport: Sendable {
    /// The replayed window's start (inclusive).
    public var since: Date
    /// The replayed window's end (exclusive).
    public var until: Date
    /// How far before `since` history is read: the longest velocity window of the rulesets.
    public var lookbackSeconds: Int

    /// Whether history is restricted to the card, device and customer ids of the replayed
    /// attempts (see the type's documentation); attempts of the window are all written either way.
    public var windowKeysOnly: Bool

    /// Rows fetched per round trip.
    package static let pageSize = 2_000

    /// An export of `[since, until)` with `lookbackSeconds` of history before it.
    ///
    /// - Parameter windowKeysOnly: Only the history that can count in the replay's velocity
    ///   (the backtest); `false` writes every event of the look-back (`issuerd rules export`).
    public init(since: Date, until: Date, lookbackSeconds: Int, windowKeysOnly: Bool = false) {
        self.since = since
        self.until = until
        self.lookbackSeconds = max(0, lookbackSeconds)
        self.windowKeysOnly = windowKeysOnly
    }

    /// The longest velocity window of `rulesets`, in seconds (0 when none uses velocity).
    public static func lookback(for rulesets: [Ruleset]) -> Int {
        rulesets.flatMap(\.velocityQueries).map(\.windowSeconds).max() ?? 0
    }

    /// Where history starts.
    public var historyStart: Date { since.addingTimeInterval(-Double(lookbackSeconds)) }

    /// The number of attempts that would be replayed.
    ///
    /// - Throws: ``PostgresError``.
    public func attemptCount(connection: PostgresConnection) throws -> Int {
        let row = try connection.query(
            "SELECT count(*)::bigint AS n FROM provisioning_attempts WHERE created_at >= \(since) AND created_at < \(until)"
        ).first
        return Int(try row?.decode("n", as: Int64.self) ?? 0)
    }

    /// Writes every line, attempts first (in time order), then the other events.
    ///
    /// Run it inside one REPEATABLE READ transaction for a consistent snapshot across pages
    /// (required with ``windowKeysOnly``, which reads history through cursors).
    ///
    /// - Parameters:
    ///   - connection: The database.
    ///   - progress: Called after each page with the lines written so far.
    ///   - line: Receives each JSON line (without its newline).
    /// - Returns: The number of lines written.
    /// - Throws: ``PostgresError``, or what `line` throws.
    @discardableResult
    public func write(
        connection: PostgresConnection, progress: (Int) -> Void = { _ in }, line: (String) throws -> Void
    ) throws -> Int {
        var written = 0
        let emit: (String) throws -> Void = { text in
            try line(text)
            written += 1
        }
        if windowKeysOnly {
            try writeKeyedHistory(connection: connection, line: emit) { progress(written) }
            try writeAttempts(from: since, connection: connection, line: emit) { progress(written) }
            try writeKeyedEvents(connection: connection, line: emit) { progress(written) }
        } else {
            try writeAttempts(from: historyStart, connection: connection, line: emit) { progress(written) }
            try writeEvents(connection: connection, line: emit) { progress(written) }
        }
        return written
    }

    /// The attempts of `[from, until)`, those before `since` as history only.
    private func writeAttempts(
        from start: Date, connection: PostgresConnection, line: (String) throws -> Void, page: () -> Void
    ) throws {
        var after: (time: Date, id: String)?
        while true {
            let cursorTime = after?.time ?? Date.distantPast
            let cursorID = after?.id ?? ""
            let rows = try connection.query(
                """
                SELECT a.attempt_id::text AS id, a.created_at, a.card_id, a.device_id, a.customer_id, a.cardholder_name_hash,
                       a.created_at >= \(since) AS replay,
                       CASE WHEN a.created_at >= \(since) THEN \(storedAttributesOf: .a) END AS attributes,
                       CASE WHEN a.created_at >= \(since)
                            THEN coalesce((a.inputs -> 'checks')::text, \(unsafeSQL: RequestChecks.legacyChecksSQL)) END AS checks
                FROM provisioning_attempts a
                WHERE a.created_at >= \(start) AND a.created_at < \(until)
                  AND (a.created_at, a.attempt_id::text) > (\(cursorTime), \(cursorID))
                ORDER BY a.created_at, a.attempt_id::text
                LIMIT \(Self.pageSize)
                """)
            for row in rows {
                let id: String = try row.decode("id")
                let time: Date = try row.decode("created_at")
                var fields = [
                    ("type", Self.quote("attempt")), ("id", Self.quote(id)), ("time", Self.quote(Self.timestamp(time))),
                ]
                for (key, column) in [
                    ("card_id", "card_id"), ("device_id", "device_id"), ("customer_id", "customer_id"),
                    ("cardholder_name", "cardholder_name_hash"),
                ] {
                    if let value = try row.decode(column, as: String?.self) { fields.append((key, Self.quote(value))) }
                }
                if try row.decode("replay", as: Bool.self) {
                    fields.append(("attributes", try row.decode("attributes", as: String?.self) ?? "{}"))
                    if let checks = try row.decode("checks", as: String?.self) { fields.append(("checks", checks)) }
                } else {
                    fields.append(("replay", "false"))
                }
                try line(Self.object(fields))
                after = (time, id)
            }
            page()
            if rows.count < Self.pageSize { return }
        }
    }

    private func writeEvents(connection: PostgresConnection, line: (String) throws -> Void, page: () -> Void) throws {
        let sources: [(kind: VelocityEvent.Kind, query: (Int64) -> PostgresQuery)] = [
            (
                .otpFailure,
                { after in
                    """
                    SELECT f.id, f.at, f.card_id, NULL::text AS device_id, f.customer_id FROM challenge_failures f
                    WHERE f.kind = 'wrong_code' AND f.at >= \(historyStart) AND f.at < \(until) AND f.id > \(after)
                    ORDER BY f.id LIMIT \(Self.pageSize)
                    """
                }
            ),
            (
                .stepUpFailure,
                { after in
                    """
                    SELECT f.id, f.at, f.card_id, NULL::text AS device_id, f.customer_id FROM challenge_failures f
                    WHERE f.kind IN ('locked', 'expired') AND f.at >= \(historyStart) AND f.at < \(until) AND f.id > \(after)
                    ORDER BY f.id LIMIT \(Self.pageSize)
                    """
                }
            ),
            (
                .tokenDeletion,
                { after in
                    """
                    SELECT e.id, e.at, coalesce(e.card_id, t.card_id) AS card_id, t.device_id, c.customer_id
                    FROM token_events e
                    LEFT JOIN tokens t ON t.token_reference = e.token_reference
                    LEFT JOIN cards c ON c.card_id = coalesce(e.card_id, t.card_id)
                    WHERE e.event = 'deleted' AND e.at >= \(historyStart) AND e.at < \(until) AND e.id > \(after)
                    ORDER BY e.id LIMIT \(Self.pageSize)
                    """
                }
            ),
        ]
        for source in sources {
            var after: Int64 = 0
            while true {
                let rows = try connection.query(source.query(after))
                for row in rows {
                    try line(Self.eventLine(source.kind, row: row))
                    after = try row.decode("id")
                }
                page()
                if rows.count < Self.pageSize { break }
            }
        }
    }

    /// The history-only attempts of `[since − lookback, since)` that share a card, device or
    /// customer id with an attempt of the window, in the same order as the full export.
    ///
    /// One index scan per key and id (`attempts_card_time`, `attempts_device_time`,
    /// `attempts_customer_time`), read through a cursor: keyset pages would repeat the scans.
    private func writeKeyedHistory(
        connection: PostgresConnection, line: (String) throws -> Void, page: () -> Void
    ) throws {
        guard historyStart < since else { return }
        let query: PostgresQuery = """
            DECLARE issuerd_history_export NO SCROLL CURSOR FOR
            WITH window_keys AS MATERIALIZED (
                SELECT DISTINCT card_id, device_id, customer_id FROM provisioning_attempts
                WHERE created_at >= \(since) AND created_at < \(until))
            SELECT h.attempt_id::text AS id, h.created_at, h.card_id, h.device_id, h.customer_id, h.cardholder_name_hash
            FROM (
                SELECT a.attempt_id, a.created_at, a.card_id, a.device_id, a.customer_id, a.cardholder_name_hash
                FROM provisioning_attempts a
                WHERE a.card_id IN (SELECT card_id FROM window_keys) AND a.created_at >= \(historyStart) AND a.created_at < \(since)
                UNION
                SELECT a.attempt_id, a.created_at, a.card_id, a.device_id, a.customer_id, a.cardholder_name_hash
                FROM provisioning_attempts a
                WHERE a.device_id IN (SELECT device_id FROM window_keys) AND a.created_at >= \(historyStart) AND a.created_at < \(since)
                UNION
                SELECT a.attempt_id, a.created_at, a.card_id, a.device_id, a.customer_id, a.cardholder_name_hash
                FROM provisioning_attempts a
                WHERE a.customer_id IN (SELECT customer_id FROM window_keys) AND a.created_at >= \(historyStart) AND a.created_at < \(since)
            ) h
            ORDER BY h.created_at, h.attempt_id::text
            """
        try stream(query, cursor: "issuerd_history_export", connection: connection, page: page) { row in
            var fields = [
                ("type", Self.quote("attempt")), ("id", Self.quote(try row.decode("id", as: String.self))),
                ("time", Self.quote(Self.timestamp(try row.decode("created_at")))),
            ]
            for (key, column) in [
                ("card_id", "card_id"), ("device_id", "device_id"), ("customer_id", "customer_id"),
                ("cardholder_name", "cardholder_name_hash"),
            ] {
                if let value = try row.decode(column, as: String?.self) { fields.append((key, Self.quote(value))) }
            }
            fields.append(("replay", "false"))
            try line(Self.object(fields))
        }
    }

    /// The events of ``writeEvents(connection:line:page:)`` whose card, device or customer id
    /// (as exported) is one of the window's attempts', in the same order.
    private func writeKeyedEvents(
        connection: PostgresConnection, line: (String) throws -> Void, page: () -> Void
    ) throws {
        let failures: ([String]) -> PostgresQuery = { kinds in
            """
            DECLARE issuerd_events_export NO SCROLL CURSOR FOR
            WITH window_keys AS MATERIALIZED (
                SELECT DISTINCT card_id, device_id, customer_id FROM provisioning_attempts
                WHERE created_at >= \(since) AND created_at < \(until))
            SELECT f.id, f.at, f.card_id, NULL::text AS device_id, f.customer_id
            FROM challenge_failures f
            WHERE f.id IN (
                SELECT f.id FROM challenge_failures f
                WHERE f.card_id IN (SELECT card_id FROM window_keys) AND f.at >= \(historyStart) AND f.at < \(until)
                UNION
                SELECT f.id FROM challenge_failures f
                WHERE f.customer_id IN (SELECT customer_id FROM window_keys) AND f.at >= \(historyStart) AND f.at < \(until))
              AND f.kind = ANY(\(kinds))
            ORDER BY f.id
            """
        }
        // A deletion's card is its own or its token's, its device the token's, its customer the
        // card's: candidates are the deletions of the window's cards (or of its customers' cards)
        // and of the tokens on those cards or the window's devices; the last WHERE is exact.
        let deletions: PostgresQuery = """
            DECLARE issuerd_events_export NO SCROLL CURSOR FOR
            WITH window_keys AS MATERIALIZED (
                SELECT DISTINCT card_id, device_id, customer_id FROM provisioning_attempts
                WHERE created_at >= \(since) AND created_at < \(until)),
            key_cards AS MATERIALIZED (
                SELECT card_id FROM window_keys WHERE card_id IS NOT NULL
                UNION
                SELECT c.card_id FROM cards c WHERE c.customer_id IN (SELECT customer_id FROM window_keys)),
            key_tokens AS MATERIALIZED (
                SELECT t.token_reference FROM tokens t WHERE t.card_id IN (SELECT card_id FROM key_cards)
                UNION
                SELECT t.token_reference FROM tokens t WHERE t.device_id IN (SELECT device_id FROM window_keys))
            SELECT e.id, e.at, coalesce(e.card_id, t.card_id) AS card_id, t.device_id, c.customer_id
            FROM token_events e
            LEFT JOIN tokens t ON t.token_reference = e.token_reference
            LEFT JOIN cards c ON c.card_id = coalesce(e.card_id, t.card_id)
            WHERE e.id IN (
                SELECT e.id FROM token_events e
                WHERE e.event = 'deleted' AND e.card_id IN (SELECT card_id FROM key_cards) AND e.at >= \(historyStart) AND e.at < \(until)
                UNION
                SELECT e.id FROM token_events e
                WHERE e.event = 'deleted' AND e.token_reference IN (SELECT token_reference FROM key_tokens)
                  AND e.at >= \(historyStart) AND e.at < \(until))
              AND (coalesce(e.card_id, t.card_id) IN (SELECT card_id FROM window_keys)
                   OR t.device_id IN (SELECT device_id FROM window_keys)
                   OR c.customer_id IN (SELECT customer_id FROM window_keys))
            ORDER BY e.id
            """
        let sources: [(kind: VelocityEvent.Kind, query: PostgresQuery)] = [
            (.otpFailure, failures(["wrong_code"])),
            (.stepUpFailure, failures(["locked", "expired"])),
            (.tokenDeletion, deletions),
        ]
        for source in sources {
            try stream(source.query, cursor: "issuerd_events_export", connection: connection, page: page) { row in
                try line(Self.eventLine(source.kind, row: row))
            }
        }
    }

    /// Runs `declare` (a `DECLARE cursor … FOR SELECT …`) and hands over its rows a page at a
    /// time; inside a transaction.
    private func stream(
        _ declare: PostgresQuery, cursor: String, connection: PostgresConnection, page: () -> Void,
        row: (PostgresRow) throws -> Void
    ) throws {
        try connection.execute(declare)
        while true {
            let rows = try connection.query(
                "FETCH FORWARD \(unsafeSQL: String(Self.pageSize)) FROM \(unsafeSQL: cursor)")
            for item in rows { try row(item) }
            page()
            if rows.count < Self.pageSize { break }
        }
        try connection.execute("CLOSE \(unsafeSQL: cursor)")
    }

    /// An event row (`at`, `card_id`, `device_id`, `customer_id`) as its line.
    private static func eventLine(_ kind: VelocityEvent.Kind, row: PostgresRow) throws -> String {
        var fields = [("type", quote(kind.rawValue)), ("time", quote(timestamp(try row.decode("at"))))]
        for key in ["card_id", "device_id", "customer_id"] {
            if let value = try row.decode(key, as: String?.self) { fields.append((key, quote(value))) }
        }
        return object(fields)
    }

    /// Members in the given order: stable lines that diff well between two exports.
    private static func object(_ fields: [(String, String)]) -> String {
        "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// A JSON string literal (RFC 8259 section 7) through Foundation's encoder.
    package static func quote(_ text: String) -> String {
        guard let data = try? encoder.encode(text) else { return "\"\"" }
        return String(decoding: data, as: UTF8.self)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()

    /// RFC 3339 in UTC with milliseconds, which ``AttemptLog`` reads back.
    public static func timestamp(_ date: Date) -> String {
        date.formatted(
            Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC") ?? .gmt))
    }
}
