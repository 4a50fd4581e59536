import Foundation
import IssuerdHistory
import IssuerdPostgres
import IssuerdTestSupport
import Testing

/// `attempts_time_keys` (sql/0017) serves the backtest's attempt history read by time, and only
/// it: the index is partial on ``BacktestHistory/timeKeysPredicate``, which that query states.
@Suite("The attempts_time_keys index: the history read by time, and nothing else")
struct BacktestTimeKeysIndexTests {
    static func plan(_ sql: String, generic: Bool = false, connection: PostgresConnection) throws -> String {
        // Only index scans, as the provisioning statements' generic plans are made.
        try connection.execute(unsafeSQL: "SET enable_seqscan = off; SET enable_bitmapscan = off")
        if generic { try connection.execute(unsafeSQL: "SET plan_cache_mode = force_generic_plan") }
        defer {
            try? connection.execute(
                unsafeSQL: "RESET enable_seqscan; RESET enable_bitmapscan; RESET plan_cache_mode; DEALLOCATE ALL")
        }
        return try connection.query("EXPLAIN \(unsafeSQL: sql)").map { try $0.decode(0, as: String.self) }.joined(
            separator: "\n")
    }

    /// The partitions' indexes of `attempts_time_keys` (each month has its own, named by PostgreSQL).
    static func timeKeysIndexes(connection: PostgresConnection) throws -> [String] {
        try connection.query("SELECT relid::text AS name FROM pg_partition_tree('attempts_time_keys') WHERE isleaf")
            .map { try $0.decode("name", as: String.self) }
    }

    @Test("The index's predicate is the one the history query states")
    func samePredicate() throws {
        let app = try MigratedDatabase()
        let predicate: String = try app.pool.withConnection { connection in
            try connection.query(
                """
                SELECT pg_get_expr(i.indpred, i.indrelid) AS predicate FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                WHERE c.relname = 'attempts_time_keys' AND i.indisvalid
                """
            ).first.map { try $0.decode("predicate") } ?? ""
        }
        #expect(predicate == "(created_at > '-infinity'::timestamp with time zone)")
        #expect(BacktestHistory.timeKeysPredicate == "a.created_at > '-infinity'")
    }

    @Test("The history read by time is an index-only scan of it; a look-up by card, device or customer never uses it")
    func onlyTheHistoryRead() throws {
        let app = try MigratedDatabase()
        let start = Date(timeIntervalSince1970: 1_740_823_200)
        for index in 0..<300 {
            try app.pool.withConnection { connection in
                try connection.execute(
                    """
                    INSERT INTO provisioning_attempts (attempt_id, channel, device_id, inputs, features, hits, flow,
                                                       decision, ruleset_version, created_at)
                    VALUES (\(UUID()), 'tsp', \("d\(index % 7)"), '{}', '{}', '[]', 'green', 'APPROVED', 'sha256:test',
                            \(start.addingTimeInterval(Double(index) * 60)))
                    """)
            }
        }
        try app.pool.withConnection { connection in
            let empty =
                "SELECT count(*) FROM provisioning_attempts WHERE device_id = $1 AND created_at >= $2 AND created_at < $3"
            // A generic plan made on the table with no statistics (as at a first start) ties every index.
            try connection.execute(unsafeSQL: "PREPARE lookup(text, timestamptz, timestamptz) AS \(empty)")
            let beforeStatistics = try Self.plan(
                "EXECUTE lookup('d1', now() - interval '1 day', now())", generic: true, connection: connection)
            let indexes = try Self.timeKeysIndexes(connection: connection)
            #expect(!indexes.isEmpty)
            #expect(!indexes.contains { beforeStatistics.contains($0) }, "\(beforeStatistics)")
            try connection.execute(unsafeSQL: "VACUUM (ANALYZE) provisioning_attempts")
            let history = """
                SELECT a.created_at, NULL::text, a.device_id, NULL::text FROM provisioning_attempts a
                WHERE a.device_id IS NOT NULL AND a.created_at >= '2025-03-01T10:00:00Z' AND a.created_at < '2025-03-01T14:00:00Z'
                  AND \(BacktestHistory.timeKeysPredicate)
                """
            let read = try Self.plan(history, connection: connection)
            #expect(indexes.contains { read.contains("Index Only Scan using \($0)") }, "\(read)")
            // Judged on the partition holding the rows: on an empty month every index costs the
            // same empty scan, and which one the planner names there reads nothing.
            let holding = try connection.query(
                """
                SELECT t.relid::text AS name FROM pg_partition_tree('attempts_time_keys') t
                JOIN pg_index i ON i.indexrelid = t.relid
                WHERE t.isleaf AND i.indrelid IN (SELECT DISTINCT tableoid FROM provisioning_attempts)
                """
            ).map { try $0.decode("name", as: String.self) }
            #expect(holding.count == 1)
            for key in ["card_id", "device_id", "customer_id"] {
                let lookup = try Self.plan(
                    "SELECT count(*) FROM provisioning_attempts WHERE \(key) = 'd1' AND created_at >= '2025-03-01T10:00:00Z'",
                    connection: connection)
                #expect(!holding.contains { lookup.contains($0) }, "\(key): \(lookup)")
            }
        }
    }
}
