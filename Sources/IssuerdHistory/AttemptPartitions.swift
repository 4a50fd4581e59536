import Foundation
import IssuerdCore
import IssuerdPostgres

/// The monthly partitions of `provisioning_attempts` (sql/0037, docs/architecture.md "History by
/// month"): made ahead, and listed for `issuerd history status`.
///
/// Partitions are UTC calendar months named `provisioning_attempts_YYYY_MM`. A table migrated
/// from the unpartitioned layout keeps its earlier rows in `provisioning_attempts_legacy` (every
/// month before the migration's bound); `provisioning_attempts_default` takes a row no month
/// partition covers, so an insert never fails for want of a partition.
package enum AttemptPartitions {
    /// Months made ahead of the current one, at start and by every round of the keeper.
    package static let monthsAhead = 3

    /// One partition as `issuerd history status` lists it.
    package struct Partition: Sendable, Equatable {
        package var name: String
        /// The first instant it holds; nil for the default partition and the legacy one (from the beginning).
        package var from: Date?
        /// The first instant past it; nil for the default partition.
        package var until: Date?
        package var rows: Int64
        /// Table, indexes and TOAST together.
        package var bytes: Int64
        package var isDefault: Bool { name == "provisioning_attempts_default" }
    }

    /// Makes the partitions of the month before the current one through `monthsAhead` months
    /// after it, each once (the database function, which runs as its owner, so the service role
    /// may call it). Rows of such a month waiting in the default partition move into it.
    ///
    /// - Returns: How many partitions were made.
    @discardableResult
    package static func makeAhead(
        on connection: PostgresConnection, now: Date = Date(), monthsAhead: Int = monthsAhead
    ) throws -> Int {
        try make(on: connection, since: now.addingTimeInterval(-31 * 86_400), through: monthAfter(now, monthsAhead))
    }

    /// Makes the monthly partitions from the month of `since` through the month of `through`.
    @discardableResult
    package static func make(on connection: PostgresConnection, since: Date, through: Date) throws -> Int {
        let rows = try connection.query(
            "SELECT issuerd_make_attempt_partitions(\(since), \(through))::int8 AS made")
        return Int(try rows.first?.decode("made", as: Int64.self) ?? 0)
    }

    /// Every partition, oldest first, the default partition last; rows counted exactly unless
    /// `countRows` is false (then 0: the bounds alone are read).
    package static func list(on connection: PostgresConnection, countRows: Bool = true) throws -> [Partition] {
        let rows = try connection.query(
            """
            SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound,
                   pg_total_relation_size(c.oid)::int8 AS bytes
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'provisioning_attempts'::regclass
            """)
        var partitions: [Partition] = []
        for row in rows {
            let name = try row.decode("name", as: String.self)
            let bound = try row.decode("bound", as: String.self)
            let count =
                countRows
                ? try connection.query(PostgresQuery(unsafeSQL: "SELECT count(*)::int8 AS n FROM \(quoted(name))"))
                : nil
            let (from, until) = bounds(bound)
            partitions.append(
                Partition(
                    name: name, from: from, until: until, rows: try count?.first?.decode("n", as: Int64.self) ?? 0,
                    bytes: try row.decode("bytes", as: Int64.self)))
        }
        return partitions.sorted { a, b in
            if a.isDefault != b.isDefault { return b.isDefault }
            return (a.from ?? .distantPast) < (b.from ?? .distantPast)
        }
    }

    /// The first instant of the oldest month with any attempt kept (nil when none is stored).
    package static func oldestKeptMonth(on connection: PostgresConnection) throws -> Date? {
        let rows = try connection.query(
            """
            SELECT date_trunc('month', min(created_at) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS month
            FROM provisioning_attempts
            """)
        return try rows.first?.decode("month", as: Date?.self)
    }

    /// The `FROM (…) TO (…)` values of a partition bound as PostgreSQL prints it.
    static func bounds(_ expression: String) -> (Date?, Date?) {
        let quoted = expression.split(separator: "'", omittingEmptySubsequences: false)
        // FOR VALUES FROM ('a') TO ('b'): the odd pieces are the quoted values.
        let values = stride(from: 1, to: quoted.count, by: 2).map { String(quoted[$0]) }
        let dates = values.map(parseTimestamp)
        if expression.contains("MINVALUE") { return (nil, dates.first ?? nil) }
        return (dates.first ?? nil, dates.dropFirst().first ?? nil)
    }

    /// `2027-01-01 00:00:00+00` as PostgreSQL prints a timestamptz.
    static func parseTimestamp(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        for format in ["yyyy-MM-dd HH:mm:ssX", "yyyy-MM-dd HH:mm:ss.SSSSSSX", "yyyy-MM-dd HH:mm:ssXXXXX"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    static func monthAfter(_ date: Date, _ months: Int) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(byAdding: .month, value: months, to: date) ?? date
    }

    package static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// Keeps monthly partitions made ahead while `issuerd serve` runs: a round at start, then every
/// six hours (each instance; the database function makes each month once, under a lock). A
/// failed round only warns: the default partition takes the attempts meanwhile.
package final class AttemptPartitionKeeper: Sendable {
    private let database: PostgresPool
    private let logger: Logger
    private let interval: TimeInterval
    private let thread = BackgroundThread(name: "issuerd-partitions")

    package init(database: PostgresPool, logger: Logger, interval: TimeInterval = 6 * 3600) {
        self.database = database
        self.logger = logger
        self.interval = interval
    }

    /// One round now, then the thread.
    package func start() {
        thread.startRounds(every: interval) { [self] in round() }
    }

    package func stop(timeout: Duration) { _ = thread.stop(timeout: timeout) }

    private func round() {
        do {
            let made = try database.withConnection { try AttemptPartitions.makeAhead(on: $0) }
            if made > 0 { logger.info("attempt partitions made ahead", ["count": .int(made)]) }
        } catch {
            logger.warning(
                "making attempt partitions ahead failed; new attempts go to the default partition meanwhile",
                ["error": "\(error)"])
        }
    }
}
