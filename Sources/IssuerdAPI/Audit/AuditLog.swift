import Foundation
import IssuerdCrypto
import IssuerdPostgres

/// The append-only, hash-chained audit log.
///
/// Every entry's hash is `SHA-256(prev_hash ‖ canonical entry)`, so editing, deleting or
/// reordering any row breaks the chain from that row on; ``verify(connection:)`` finds the
/// first break. Appends run inside the caller's transaction, serialised by a transaction-level
/// advisory lock so two writers never chain onto the same predecessor.
enum AuditLog {
    /// The advisory lock key serialising appends ("audit" in ASCII).
    static let lockKey: Int64 = 0x6175_6469_74
    /// The chain's anchor: the `prev_hash` of the first entry.
    static let genesis = [UInt8](repeating: 0, count: 32)

    /// Appends one entry within the caller's open transaction.
    ///
    /// - Parameters:
    ///   - actor: Who did it, e.g. `apikey:3f2a…`, `tsp`, `system`.
    ///   - action: What, e.g. `card.status_changed`.
    ///   - subject: The object, e.g. `card:c-123`.
    ///   - details: Facts about the change; never a PAN or a secret.
    static func append(
        actor: String, action: String, subject: String, details: [String: String], at time: Date, connection: PostgresConnection
    ) throws {
        try connection.execute("SELECT pg_advisory_xact_lock(\(lockKey))")
        let last = try connection.query("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1").first
        let sequence = (try last?.decode("seq", as: Int64.self) ?? 0) + 1
        let previous = try last?.decode("hash", as: [UInt8].self) ?? genesis
        let milliseconds = Int64((time.timeIntervalSince1970 * 1000).rounded(.down))
        let detailsText = try canonicalJSON(details)
        let hash = entryHash(
            previous: previous, sequence: sequence, milliseconds: milliseconds, actor: actor, action: action, subject: subject,
            details: detailsText)
        try connection.execute(
            """
            INSERT INTO audit_log (seq, at_ms, actor, action, subject, details, prev_hash, hash)
            VALUES (\(sequence), \(milliseconds), \(actor), \(action), \(subject), \(detailsText), \(previous), \(hash))
            """)
    }

    /// The outcome of walking the chain.
    struct Verification: Sendable, Equatable {
        /// Entries checked.
        var entries: Int
        /// The first sequence number whose hash or link does not hold, if any.
        var firstBrokenSequence: Int64?
        /// Why it does not hold.
        var problem: String?

        var isIntact: Bool { firstBrokenSequence == nil }
    }

    /// Recomputes every hash in order and checks each link and that no sequence number is missing.
    static func verify(connection: PostgresConnection, progress: (Int) -> Void = { _ in }) throws -> Verification {
        var previous = genesis
        var expectedSequence: Int64 = 1
        var count = 0
        var after: Int64 = 0
        while true {
            let rows = try connection.query(
                """
                SELECT seq, at_ms, actor, action, subject, details, prev_hash, hash
                FROM audit_log WHERE seq > \(after) ORDER BY seq LIMIT 5000
                """)
            if rows.isEmpty { break }
            for row in rows {
                let sequence = try row.decode("seq", as: Int64.self)
                guard sequence == expectedSequence else {
                    return Verification(entries: count, firstBrokenSequence: expectedSequence, problem: "entry \(expectedSequence) is missing")
                }
                guard try row.decode("prev_hash", as: [UInt8].self) == previous else {
                    return Verification(entries: count, firstBrokenSequence: sequence, problem: "entry \(sequence) does not link to its predecessor")
                }
                let hash = entryHash(
                    previous: previous, sequence: sequence, milliseconds: try row.decode("at_ms"), actor: try row.decode("actor"),
                    action: try row.decode("action"), subject: try row.decode("subject"), details: try row.decode("details"))
                guard try row.decode("hash", as: [UInt8].self) == hash else {
                    return Verification(entries: count, firstBrokenSequence: sequence, problem: "entry \(sequence) was altered")
                }
                previous = hash
                expectedSequence += 1
                count += 1
                after = sequence
            }
            progress(count)
        }
        return Verification(entries: count, firstBrokenSequence: nil, problem: nil)
    }

    /// Length-prefixed fields, so no two different entries serialise to the same bytes.
    static func entryHash(
        previous: [UInt8], sequence: Int64, milliseconds: Int64, actor: String, action: String, subject: String, details: String
    ) -> [UInt8] {
        var bytes = previous
        for field in [String(sequence), String(milliseconds), actor, action, subject, details] {
            let utf8 = Array(field.utf8)
            bytes += Array(String(utf8.count).utf8) + [0x3A] + utf8
        }
        return SHA256.hash(bytes)
    }

    static func canonicalJSON(_ details: [String: String]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(details), as: UTF8.self)
    }
}
