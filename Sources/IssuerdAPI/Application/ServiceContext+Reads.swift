import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres

extension ServiceContext {
    /// The primary, for the console's roll-ups (written while a page reads, so never on the read
    /// database), when the analysts read elsewhere; nil when ``reads`` is the primary itself (a
    /// reader then rolls up on its own connection instead of borrowing a second one).
    var rollUpOnPrimary: PostgresPool? { readReplica == nil ? nil : database }

    /// Runs an analyst's read, whose database work goes to ``reads``, so that a query the read
    /// database cancels is never a 500: a hot standby cancels a query whose rows or locks the
    /// replay of the primary's changes needs (a recovery conflict, ``PostgresError/isRecoveryConflict``),
    /// and such a query usually succeeds when run again. `body` runs once more; when that is
    /// cancelled too, the answer is 503 `database_unavailable` with `Retry-After`. A read database
    /// that cannot be reached is a 503 as well (the route table's answer to an unavailable
    /// database): the reads never fall back to the primary, which they are there to spare.
    ///
    /// `body` may run twice, so it must read only (a roll-up's catch-up on the primary is fine:
    /// it is idempotent).
    func analystRead<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PostgresError where error.isRecoveryConflict {
            readConflicts.increment(labels: ["retried"])
            logger.notice(
                "an analyst read was cancelled by the read database (a recovery conflict); running it again",
                ["sqlState": .string(error.sqlState ?? "none")])
        }
        do {
            return try body()
        } catch let error as PostgresError where error.isRecoveryConflict {
            readConflicts.increment(labels: ["refused"])
            logger.warning(
                "an analyst read was cancelled twice by the read database (a recovery conflict); answered 503",
                ["sqlState": .string(error.sqlState ?? "none")])
            var refusal = HTTPError(
                status: 503, code: .databaseUnavailable,
                message:
                    "the read database cancelled this query twice to replay the primary's changes (a recovery conflict); retry shortly, or narrow the period"
            )
            refusal.headers.set("Retry-After", "1")
            throw refusal
        }
    }
}
