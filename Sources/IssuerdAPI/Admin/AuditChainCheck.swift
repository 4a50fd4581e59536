import Foundation
import IssuerdPostgres

/// The outcome of `issuerd audit verify`.
public struct AuditChainReport: Sendable, Equatable {
    /// Entries whose hash and link held.
    public let entries: Int
    /// The first sequence number that does not hold, if any.
    public let firstBrokenSequence: Int64?
    /// Why it does not hold (altered, missing, unlinked).
    public let problem: String?

    /// True when every entry holds.
    public var isIntact: Bool { firstBrokenSequence == nil }
}

/// Walks the audit log's hash chain for operators.
public enum AuditChainCheck {
    /// Verifies the whole chain in one repeatable-read snapshot, so entries appended meanwhile
    /// by the running service neither break nor lengthen the walk.
    ///
    /// - Parameter progress: Called with the entries checked so far, every few thousand.
    public static func verify(database: PostgresPool, progress: (Int) -> Void = { _ in }) throws -> AuditChainReport {
        let result = try database.withConnection { connection in
            try connection.transaction(isolation: .repeatableRead) { try AuditLog.verify(connection: $0, progress: progress) }
        }
        return AuditChainReport(entries: result.entries, firstBrokenSequence: result.firstBrokenSequence, problem: result.problem)
    }
}
