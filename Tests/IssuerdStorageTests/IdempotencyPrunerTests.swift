import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

/// `Idempotency-Key`s older than the retention are deleted by the pruner's rounds, in batches,
/// and younger ones (with their stored answers) are kept.
@Suite("Idempotency keys: pruned past retention")
struct IdempotencyPrunerTests {
    @Test("A round deletes every key claimed before the retention, across several batches, and keeps the rest")
    func prunesPastRetention() throws {
        let app = try MigratedDatabase()
        let now = Date()
        try app.pool.withConnection { connection in
            // 2,500 old keys (three batches of 1,000) and 3 recent ones, one of them still claimed.
            try connection.execute(
                """
                INSERT INTO idempotency_keys (scope, key, request_hash, status, response_body, created_at)
                SELECT 'test', 'old-' || i, '\\x00', 201, '{}', \(now) - interval '8 days' - i * interval '1 second'
                FROM generate_series(1, 2500) AS i
                """)
            try connection.execute(
                """
                INSERT INTO idempotency_keys (scope, key, request_hash, status, response_body, created_at)
                VALUES ('test', 'recent-1', '\\x00', 201, '{}', \(now) - interval '6 days'),
                       ('test', 'recent-2', '\\x00', 200, '{}', \(now) - interval '1 hour'),
                       ('test', 'claimed', '\\x00', 0, '', \(now))
                """)
        }
        let pruner = IdempotencyPruner(
            database: app.pool, retention: .seconds(7 * 86_400),
            logger: Logger(label: "test", minimumLevel: .critical, handler: JSONLogHandler.standardError))
        pruner.round(now: now)
        let left = try app.pool.withConnection { connection in
            try connection.query("SELECT key FROM idempotency_keys ORDER BY key").map {
                try $0.decode("key", as: String.self)
            }
        }
        #expect(left == ["claimed", "recent-1", "recent-2"])
        // A later round, eight days on, takes the rest.
        pruner.round(now: now.addingTimeInterval(8 * 86_400))
        let rest = try app.pool.withConnection {
            try $0.query("SELECT count(*)::int8 AS n FROM idempotency_keys")[0].decode("n", as: Int64.self)
        }
        #expect(rest == 0)
    }
}
