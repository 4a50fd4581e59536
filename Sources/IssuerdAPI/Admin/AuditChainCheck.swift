import Foundation
import IssuerdPostgres
import IssuerdStorage

/// The outcome of `issuerd audit verify`.
public struct AuditChainReport: Sendable, Equatable {
    /// Entries whose hash and link held.
    public let entries: Int
    /// The first sequence number that does not hold, if any.
    public let firstBrokenSequence: Int64?
    /// Why it does not hold (altered, missing, unlinked).
    public let problem: String?
    /// Entries sealed by this check before the walk.
    public let sealed: Int
    /// Committed entries still unchained after the walk (committed meanwhile, or left by a
    /// sealer that cannot write).
    public let unsealed: Int
    /// How long ago the oldest unchained entry was written, if any.
    public let oldestUnsealedAge: Duration?
    /// The age past which an unchained entry fails the check.
    public let unsealedMaxAge: Duration
    /// Entries through this sequence number were archived out of the table (`issuerd history
    /// archive`); the walk started after them, at the anchor ``archivedThroughHash``.
    public let archivedThrough: Int64?
    /// The hash of the last archived entry, which the first entry left links to.
    public let archivedThroughHash: [UInt8]?

    /// True when every sealed entry holds.
    public var isIntact: Bool { firstBrokenSequence == nil }
    /// True when an entry stayed unchained longer than ``unsealedMaxAge``: no sealer runs, or
    /// one fails (its log says why); such an entry is not yet protected by the chain.
    public var hasStaleUnsealed: Bool { oldestUnsealedAge.map { $0 > unsealedMaxAge } ?? false }
}

/// Walks the audit log's hash chain for operators.
public enum AuditChainCheck {
    /// Seals what is pending (unless `seal` is false, e.g. on a read-only replica), verifies the
    /// whole chain in one repeatable-read snapshot, so entries appended meanwhile by the running
    /// service neither break nor lengthen the walk, then counts what is still unchained.
    ///
    /// - Parameters:
    ///   - seal: Chain committed entries first (waiting for a running sealer's round).
    ///   - unsealedMaxAge: An unchained entry older than this fails the check.
    ///   - now: The current time, for the age of unchained entries.
    ///   - progress: Called with the entries checked so far, every few thousand.
    public static func verify(
        database: PostgresPool, seal: Bool = true, unsealedMaxAge: Duration = .seconds(60), now: Date = Date(),
        progress: (Int) -> Void = { _ in }
    ) throws -> AuditChainReport {
        let sealed = seal ? try database.withConnection { try AuditLog.seal(connection: $0, wait: true) } : 0
        let (result, unsealed, anchor) = try database.withConnection { connection in
            try connection.transaction(isolation: .repeatableRead) {
                (
                    try AuditLog.verify(connection: $0, progress: progress), try AuditLog.unsealed(connection: $0),
                    try AuditArchive.anchor(connection: $0)
                )
            }
        }
        let age = unsealed.oldestMilliseconds.map { oldest -> Duration in
            .milliseconds(max(0, Int64((now.timeIntervalSince1970 * 1000).rounded(.down)) - oldest))
        }
        return AuditChainReport(
            entries: result.entries, firstBrokenSequence: result.firstBrokenSequence, problem: result.problem,
            sealed: sealed,
            unsealed: unsealed.count, oldestUnsealedAge: age, unsealedMaxAge: unsealedMaxAge,
            archivedThrough: anchor?.sequence, archivedThroughHash: anchor?.hash)
    }
}
