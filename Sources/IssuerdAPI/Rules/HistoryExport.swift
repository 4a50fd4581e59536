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
public struct HistoryExport: Sendable {
    /// The replayed window's start (inclusive).
    public var since: Date
    /// The replayed window's end (exclusive).
    public var until: Date
    /// How far before `since` history is read: the longest velocity window of the rulesets.
    public var lookbackSeconds: Int

    /// Rows fetched per round trip.
    static let pageSize = 2_000

    /// An export of `[since, until)` with `lookbackSeconds` of history before it.
    public init(since: Date, until: Date, lookbackSeconds: Int) {
        self.since = since
        self.until = until
        self.lookbackSeconds = max(0, lookbackSeconds)
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
    /// Run it inside one REPEATABLE READ transaction for a consistent snapshot across pages.
    ///
    /// - Parameters:
    ///   - connection: The database.
    ///   - progress: Called after each page with the lines written so far.
    ///   - line: Receives each JSON line (without its newline).
    /// - Returns: The number of lines written.
    /// - Throws: ``PostgresError``, or what `line` throws.
    @discardableResult
    public func write(connection: PostgresConnection, progress: (Int) -> Void = { _ in }, line: (String) throws -> Void) throws -> Int {
        var written = 0
        try writeAttempts(connection: connection) { text in
            try line(text)
            written += 1
        } page: { progress(written) }
        try writeEvents(connection: connection) { text in
            try line(text)
            written += 1
        } page: { progress(written) }
        return written
    }

    private func writeAttempts(connection: PostgresConnection, line: (String) throws -> Void, page: () -> Void) throws {
        let names = AttributeCatalog.all.map(\.name)
        var after: (time: Date, id: String)?
        while true {
            let cursorTime = after?.time ?? Date.distantPast
            let cursorID = after?.id ?? ""
            let rows = try connection.query(
                """
                SELECT a.attempt_id::text AS id, a.created_at, a.card_id, a.device_id, a.customer_id, a.cardholder_name_hash,
                       a.created_at >= \(since) AS replay,
                       CASE WHEN a.created_at >= \(since) THEN (
                           SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}'::jsonb)::text
                           FROM jsonb_each(CASE WHEN jsonb_typeof(a.inputs -> 'attributes') = 'object' THEN a.inputs -> 'attributes'
                                                WHEN jsonb_typeof(a.inputs) = 'object' THEN a.inputs ELSE '{}'::jsonb END) e
                           WHERE e.key = ANY(\(names)))
                       END AS attributes
                FROM provisioning_attempts a
                WHERE a.created_at >= \(historyStart) AND a.created_at < \(until)
                  AND (a.created_at, a.attempt_id::text) > (\(cursorTime), \(cursorID))
                ORDER BY a.created_at, a.attempt_id::text
                LIMIT \(Self.pageSize)
                """)
            for row in rows {
                let id: String = try row.decode("id")
                let time: Date = try row.decode("created_at")
                var fields = [("type", Self.quote("attempt")), ("id", Self.quote(id)), ("time", Self.quote(Self.timestamp(time)))]
                for (key, column) in [("card_id", "card_id"), ("device_id", "device_id"), ("customer_id", "customer_id"),
                                      ("cardholder_name", "cardholder_name_hash")] {
                    if let value = try row.decode(column, as: String?.self) { fields.append((key, Self.quote(value))) }
                }
                if try row.decode("replay", as: Bool.self) {
                    fields.append(("attributes", try row.decode("attributes", as: String?.self) ?? "{}"))
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
            (.otpFailure, { after in
                """
                SELECT f.id, f.at, f.card_id, NULL::text AS device_id, f.customer_id FROM challenge_failures f
                WHERE f.kind = 'wrong_code' AND f.at >= \(historyStart) AND f.at < \(until) AND f.id > \(after)
                ORDER BY f.id LIMIT \(Self.pageSize)
                """
            }),
            (.stepUpFailure, { after in
                """
                SELECT f.id, f.at, f.card_id, NULL::text AS device_id, f.customer_id FROM challenge_failures f
                WHERE f.kind IN ('locked', 'expired') AND f.at >= \(historyStart) AND f.at < \(until) AND f.id > \(after)
                ORDER BY f.id LIMIT \(Self.pageSize)
                """
            }),
            (.tokenDeletion, { after in
                """
                SELECT e.id, e.at, coalesce(e.card_id, t.card_id) AS card_id, t.device_id, c.customer_id
                FROM token_events e
                LEFT JOIN tokens t ON t.token_reference = e.token_reference
                LEFT JOIN cards c ON c.card_id = coalesce(e.card_id, t.card_id)
                WHERE e.event = 'deleted' AND e.at >= \(historyStart) AND e.at < \(until) AND e.id > \(after)
                ORDER BY e.id LIMIT \(Self.pageSize)
                """
            }),
        ]
        for source in sources {
            var after: Int64 = 0
            while true {
                let rows = try connection.query(source.query(after))
                for row in rows {
                    var fields = [("type", Self.quote(source.kind.rawValue)), ("time", Self.quote(Self.timestamp(try row.decode("at"))))]
                    for key in ["card_id", "device_id", "customer_id"] {
                        if let value = try row.decode(key, as: String?.self) { fields.append((key, Self.quote(value))) }
                    }
                    try line(Self.object(fields))
                    after = try row.decode("id")
                }
                page()
                if rows.count < Self.pageSize { break }
            }
        }
    }

    /// Members in the given order: stable lines that diff well between two exports.
    private static func object(_ fields: [(String, String)]) -> String {
        "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// A JSON string literal (RFC 8259 section 7) through Foundation's encoder.
    static func quote(_ text: String) -> String {
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
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC") ?? .gmt))
    }
}
