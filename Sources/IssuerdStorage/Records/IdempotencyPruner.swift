import Foundation
import IssuerdCore
import IssuerdPostgres

extension IdempotencyStore {
    /// Deletes the keys claimed before `cutoff`, `batch` rows per statement (each its own short
    /// transaction, so no long lock and no long-held snapshot), until none is left.
    ///
    /// - Returns: The keys deleted.
    package static func prune(before cutoff: Date, batch: Int = 1_000, connection: PostgresConnection) throws -> Int {
        var total = 0
        while true {
            let deleted = try connection.execute(
                """
                DELETE FROM idempotency_keys WHERE (scope, key) IN (
                    SELECT scope, key FROM idempotency_keys WHERE created_at < \(cutoff) LIMIT \(batch))
                """)
            total += deleted
            if deleted < batch { return total }
        }
    }
}

/// Forgets `Idempotency-Key`s older than `ISSUERD_IDEMPOTENCY_RETENTION` while `issuerd serve`
/// runs: a round at start, then every hour (each instance; deleting what another instance
/// deleted already is a no-op). After that long, the same key is a new request. A failed round
/// only warns: the table grows until the next one.
package final class IdempotencyPruner: Sendable {
    private let database: PostgresPool
    private let retention: Duration
    private let logger: Logger
    private let interval: TimeInterval
    private let thread = BackgroundThread(name: "issuerd-idempotency")

    package init(database: PostgresPool, retention: Duration, logger: Logger, interval: TimeInterval = 3600) {
        self.database = database
        self.retention = retention
        self.logger = logger
        self.interval = interval
    }

    /// One round now, then the thread.
    package func start() {
        thread.startRounds(every: interval) { [self] in round() }
    }

    package func stop(timeout: Duration) { _ = thread.stop(timeout: timeout) }

    /// One pruning round, for the background thread and tests.
    package func round(now: Date = Date()) {
        do {
            let cutoff = now.addingTimeInterval(-retention.timeInterval)
            let deleted = try database.withConnection { try IdempotencyStore.prune(before: cutoff, connection: $0) }
            if deleted > 0 { logger.info("expired idempotency keys deleted", ["count": .int(deleted)]) }
        } catch {
            logger.warning(
                "deleting expired idempotency keys failed; the next round tries again", ["error": "\(error)"])
        }
    }
}
