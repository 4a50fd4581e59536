import Foundation
import IssuerdCrypto
import IssuerdPostgres

/// The audit log's entries past retention, moved out of the table into archive segments without
/// breaking the chain (docs/runbook.md, "Archive months past retention").
///
/// A segment is a run of sealed entries, one JSON object per line (``line(_:)``), written by
/// `issuerd history archive` beside the attempts' months. When the segment has been written and
/// read back, one transaction records an **anchor** (the segment's last sequence number and hash,
/// in `audit_log_archives`) and deletes the segment's entries; the table's trigger lets an entry
/// go only when an anchor covers it, and only the owner role may write anchors or delete. The
/// first entry left in the table links to the anchor's hash, so `issuerd audit verify` walks the
/// table from the anchor, and with `--archive DIR` walks the segments from the chain's start
/// first and checks that they end exactly at the anchor.
package enum AuditArchive {
    /// Where the chain left the table: entries through `sequence` are archived, and the next
    /// entry links to `hash`.
    package struct Anchor: Sendable, Equatable {
        package var sequence: Int64
        package var hash: [UInt8]

        package init(sequence: Int64, hash: [UInt8]) {
            self.sequence = sequence
            self.hash = hash
        }
    }

    /// The newest anchor, or nil when nothing was ever archived.
    package static func anchor(connection: PostgresConnection) throws -> Anchor? {
        try connection.query(
            "SELECT through_seq, through_hash FROM audit_log_archives ORDER BY through_seq DESC LIMIT 1"
        ).first.map {
            Anchor(sequence: try $0.decode("through_seq"), hash: try $0.decode("through_hash"))
        }
    }

    /// The last sequence number a segment may end at so that every entry in it was written
    /// before `cutoff`: the entries before the first sealed entry at or after it (the chain's
    /// order is seal order, so a later entry may carry an earlier time; it then waits). Nil when
    /// no sealed entry past the anchor qualifies.
    package static func archivable(
        before cutoff: Date, after anchor: Anchor?, connection: PostgresConnection
    ) throws
        -> Int64?
    {
        let milliseconds = Int64((cutoff.timeIntervalSince1970 * 1000).rounded(.down))
        let after = anchor?.sequence ?? 0
        let through = try connection.query(
            """
            SELECT coalesce((SELECT min(seq) - 1 FROM audit_log WHERE seq > \(after) AND at_ms >= \(milliseconds)),
                            (SELECT max(seq) FROM audit_log)) AS through
            """
        ).first?.decode("through", as: Int64?.self)
        guard let through, through > after else { return nil }
        return through
    }

    /// Calls `body` with each sealed entry after `anchor` through `through`, in order, reading
    /// 5,000 at a time (call it inside a repeatable-read transaction for one snapshot).
    package static func entries(
        after anchor: Anchor?, through: Int64, connection: PostgresConnection,
        _ body: (AuditLog.SealedEntry) throws -> Void
    ) throws {
        var after = anchor?.sequence ?? 0
        while after < through {
            let rows = try connection.query(
                """
                SELECT seq, at_ms, actor, action, subject, details, prev_hash, hash FROM audit_log
                WHERE seq > \(after) AND seq <= \(through) ORDER BY seq LIMIT 5000
                """)
            if rows.isEmpty { return }
            for row in rows {
                let entry = try AuditLog.SealedEntry(row: row)
                try body(entry)
                after = entry.sequence
            }
        }
    }

    /// The segment file's form of a sealed entry.
    private struct Line: Codable {
        var seq: Int64
        var atMs: Int64
        var actor: String
        var action: String
        var subject: String
        var details: String
        var prevHash: String
        var hash: String
    }

    /// One entry as a segment line (JSON, no newline).
    package static func line(_ entry: AuditLog.SealedEntry) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let line = Line(
            seq: entry.sequence, atMs: entry.milliseconds, actor: entry.actor, action: entry.action,
            subject: entry.subject, details: entry.details, prevHash: BinaryEncoding.hexString(entry.previousHash),
            hash: BinaryEncoding.hexString(entry.hash))
        return String(decoding: try encoder.encode(line), as: UTF8.self)
    }

    /// A segment line read back; nil when it is not one.
    package static func entry(line bytes: [UInt8]) -> AuditLog.SealedEntry? {
        guard let line = try? JSONDecoder().decode(Line.self, from: Data(bytes)),
            let previous = try? BinaryEncoding.decodeHex(line.prevHash), previous.count == 32,
            let hash = try? BinaryEncoding.decodeHex(line.hash), hash.count == 32
        else { return nil }
        return AuditLog.SealedEntry(
            sequence: line.seq, milliseconds: line.atMs, actor: line.actor, action: line.action,
            subject: line.subject, details: line.details, previousHash: previous, hash: hash)
    }

    /// Records `anchor` for the segment `file` (its SHA-256 `digest`) and deletes the entries it
    /// covers, in one transaction under the sealers' lock, after checking that no other archive
    /// ran meanwhile and that the table still holds exactly those entries, unchanged at the end.
    ///
    /// - Returns: The entries deleted.
    /// - Throws: ``AuditArchiveError`` when the table moved under the archive (nothing changes).
    package static func drop(
        after previous: Anchor?, through anchor: Anchor, file: String, digest: String, connection: PostgresConnection
    ) throws -> Int {
        try connection.transaction { connection in
            try connection.execute("SELECT pg_advisory_xact_lock(\(AuditLog.lockKey))")
            guard try self.anchor(connection: connection) == previous else {
                throw AuditArchiveError("another archive of the audit log ran meanwhile; nothing deleted")
            }
            let last = try connection.query("SELECT hash FROM audit_log WHERE seq = \(anchor.sequence)").first
            guard try last?.decode("hash", as: [UInt8].self) == anchor.hash else {
                throw AuditArchiveError("audit entry \(anchor.sequence) is not the one archived; nothing deleted")
            }
            let first = (previous?.sequence ?? 0) + 1
            try connection.execute(
                """
                INSERT INTO audit_log_archives (through_seq, first_seq, through_hash, file, sha256)
                VALUES (\(anchor.sequence), \(first), \(Data(anchor.hash)), \(file), \(digest))
                """)
            let deleted = try connection.execute(
                "DELETE FROM audit_log WHERE seq >= \(first) AND seq <= \(anchor.sequence)")
            guard deleted == Int(anchor.sequence - first + 1) else {
                throw AuditArchiveError(
                    "the table held \(deleted) of audit entries \(first)–\(anchor.sequence); nothing deleted")
            }
            return deleted
        }
    }
}

/// The audit log changed under an archive run: the run changes nothing.
package struct AuditArchiveError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
