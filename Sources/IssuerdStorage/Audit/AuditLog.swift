import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres

/// The append-only, hash-chained audit log.
///
/// Every entry's hash is `SHA-256(prev_hash ‖ canonical entry)`, so editing, deleting or
/// reordering any sealed row breaks the chain from that row on; ``verify(connection:progress:)``
/// finds the first break.
///
/// Appends run inside the caller's transaction without any lock: the entry is inserted unchained
/// (`seq`, `prev_hash` and `hash` NULL; `id` gives the order of arrival), so audited writes on
/// every instance commit in parallel. ``seal(connection:wait:limit:)`` chains committed entries
/// afterwards, one sealer at a time across instances (``AuditSealer`` runs it in the background,
/// `issuerd audit verify` before walking). Chain order is seal order: an entry whose transaction
/// commits late is simply sealed later.
package enum AuditLog {
    /// The advisory lock key serialising sealers ("audit" in ASCII).
    package static let lockKey: Int64 = 0x6175_6469_74
    /// The chain's anchor: the `prev_hash` of the first entry.
    package static let genesis = [UInt8](repeating: 0, count: 32)

    /// Appends one unchained entry within the caller's open transaction.
    ///
    /// - Parameters:
    ///   - actor: Who did it, e.g. `apikey:3f2a…`, `tsp`, `system`.
    ///   - action: What, e.g. `card.status_changed`.
    ///   - subject: The object, e.g. `card:c-123`.
    ///   - details: Facts about the change; never a PAN or a secret.
    package static func append(
        actor: String, action: String, subject: String, details: [String: String], at time: Date,
        connection: PostgresConnection
    ) throws {
        try connection.execute(appendQuery(actor: actor, action: action, subject: subject, details: details, at: time))
    }

    /// Appends one unchained entry per element of `entries`, all by `actor` at `time`, in one
    /// statement within the caller's open transaction; they arrive (and are sealed) in order.
    package static func append(
        actor: String, entries: [(action: String, subject: String, details: [String: String])], at time: Date,
        connection: PostgresConnection
    ) throws {
        guard !entries.isEmpty else { return }
        let milliseconds = Int64((time.timeIntervalSince1970 * 1000).rounded(.down))
        try connection.execute(
            """
            INSERT INTO audit_log (at_ms, actor, action, subject, details)
            SELECT \(milliseconds), \(actor), e.action, e.subject, e.details
            FROM unnest(\(entries.map(\.action))::text[], \(entries.map(\.subject))::text[],
                        \(entries.map { canonicalJSON($0.details) })::text[]) WITH ORDINALITY AS e(action, subject, details, n)
            ORDER BY e.n
            """)
    }

    /// The INSERT of ``append(actor:action:subject:details:at:connection:)``, for callers that
    /// pipeline their statements.
    package static func appendQuery(
        actor: String, action: String, subject: String, details: [String: String], at time: Date
    ) -> PostgresQuery {
        let milliseconds = Int64((time.timeIntervalSince1970 * 1000).rounded(.down))
        let detailsText = canonicalJSON(details)
        return
            "INSERT INTO audit_log (at_ms, actor, action, subject, details) VALUES (\(milliseconds), \(actor), \(action), \(subject), \(detailsText))"
    }

    /// Chains committed unsealed entries in order of arrival, in batches of `limit`, each batch
    /// in its own short transaction under the advisory lock (so at most one sealer at a time).
    ///
    /// - Parameters:
    ///   - wait: Wait for another sealer to finish (`issuerd audit verify`, tests) rather than
    ///     leave the work to it (the background sealer).
    ///   - limit: Entries per transaction.
    /// - Returns: The entries sealed (0 when another sealer held the lock and `wait` is false).
    @discardableResult
    package static func seal(connection: PostgresConnection, wait: Bool, limit: Int = 2000) throws -> Int {
        var total = 0
        while true {
            let sealed = try connection.transaction { try sealBatch(connection: $0, wait: wait, limit: limit) }
            total += sealed
            if sealed < limit { return total }
        }
    }

    /// One sealing transaction (read committed: each statement sees what committed before the
    /// lock was taken, including the previous sealer's last entry).
    private static func sealBatch(connection: PostgresConnection, wait: Bool, limit: Int) throws -> Int {
        if wait {
            try connection.execute("SELECT pg_advisory_xact_lock(\(lockKey))")
        } else {
            let locked = try connection.query("SELECT pg_try_advisory_xact_lock(\(lockKey)) AS locked").first?.decode(
                "locked", as: Bool.self)
            guard locked == true else { return 0 }
        }
        let pending = try connection.query(
            """
            SELECT id, at_ms, actor, action, subject, details FROM audit_log
            WHERE seq IS NULL ORDER BY id LIMIT \(limit) FOR UPDATE
            """)
        if pending.isEmpty { return 0 }
        // The newest sealed entry, or the archive anchor when every sealed entry was archived.
        let last = try connection.query(
            """
            (SELECT seq, hash FROM audit_log WHERE seq IS NOT NULL ORDER BY seq DESC LIMIT 1)
            UNION ALL
            (SELECT through_seq, through_hash FROM audit_log_archives ORDER BY through_seq DESC LIMIT 1)
            ORDER BY seq DESC LIMIT 1
            """
        ).first
        var sequence = try last?.decode("seq", as: Int64.self) ?? 0
        var previous = try last?.decode("hash", as: [UInt8].self) ?? genesis
        var ids: [String] = []
        var sequences: [String] = []
        var previousHashes: [String] = []
        var hashes: [String] = []
        for row in pending {
            sequence += 1
            let hash = entryHash(
                previous: previous, sequence: sequence, milliseconds: try row.decode("at_ms"),
                actor: try row.decode("actor"),
                action: try row.decode("action"), subject: try row.decode("subject"), details: try row.decode("details")
            )
            ids.append(String(try row.decode("id", as: Int64.self)))
            sequences.append(String(sequence))
            previousHashes.append(Hex.lowercase(previous))
            hashes.append(Hex.lowercase(hash))
            previous = hash
        }
        let updated = try connection.execute(
            """
            UPDATE audit_log SET seq = u.seq::bigint, prev_hash = decode(u.prev_hash, 'hex'), hash = decode(u.hash, 'hex')
            FROM unnest(\(ids)::text[], \(sequences)::text[], \(previousHashes)::text[], \(hashes)::text[]) AS u(id, seq, prev_hash, hash)
            WHERE audit_log.id = u.id::bigint AND audit_log.seq IS NULL
            """)
        guard updated == pending.count else { throw AuditSealError(expected: pending.count, updated: updated) }
        return updated
    }

    /// Entries not yet sealed and the time of the oldest (as its caller recorded it).
    package struct Unsealed: Sendable, Equatable {
        package var count: Int
        package var oldestMilliseconds: Int64?
    }

    package static func unsealed(connection: PostgresConnection) throws -> Unsealed {
        let row = try connection.query(
            "SELECT count(*)::bigint AS n, min(at_ms) AS oldest FROM audit_log WHERE seq IS NULL"
        ).first
        return Unsealed(
            count: Int(try row?.decode("n", as: Int64.self) ?? 0),
            oldestMilliseconds: try row?.decode("oldest", as: Int64?.self))
    }

    /// The outcome of walking the chain.
    package struct Verification: Sendable, Equatable {
        /// Entries checked.
        package var entries: Int
        /// The first sequence number whose hash or link does not hold, if any.
        package var firstBrokenSequence: Int64?
        /// Why it does not hold.
        package var problem: String?
        /// Entries through this sequence number were archived out of the table, so the walk
        /// started after it.
        package var archivedThrough: Int64? = nil

        package var isIntact: Bool { firstBrokenSequence == nil }
    }

    /// Recomputes every sealed entry's hash in order and checks each link and that no sequence
    /// number is missing. Unsealed entries are not part of the chain yet (see ``unsealed(connection:)``).
    /// Entries archived out of the table (``AuditArchive``) are not walked: the walk starts at the
    /// newest archive anchor, whose hash the first remaining entry must link to.
    package static func verify(
        connection: PostgresConnection, progress: (Int) -> Void = { _ in }
    ) throws -> Verification {
        let anchor = try AuditArchive.anchor(connection: connection)
        var walk = ChainWalk(after: anchor)
        var after = anchor?.sequence ?? 0
        while true {
            let rows = try connection.query(
                """
                SELECT seq, at_ms, actor, action, subject, details, prev_hash, hash
                FROM audit_log WHERE seq > \(after) ORDER BY seq LIMIT 5000
                """)
            if rows.isEmpty { break }
            for row in rows {
                let entry = try SealedEntry(row: row)
                if let broken = walk.check(entry) {
                    var verification = broken
                    verification.archivedThrough = anchor?.sequence
                    return verification
                }
                after = entry.sequence
            }
            progress(walk.entries)
        }
        return Verification(
            entries: walk.entries, firstBrokenSequence: nil, problem: nil, archivedThrough: anchor?.sequence)
    }

    /// One sealed entry as stored (in the table or in an archive segment).
    package struct SealedEntry: Sendable, Equatable {
        package var sequence: Int64
        package var milliseconds: Int64
        package var actor: String
        package var action: String
        package var subject: String
        /// The stored details text, hashed as it is.
        package var details: String
        package var previousHash: [UInt8]
        package var hash: [UInt8]

        package init(
            sequence: Int64, milliseconds: Int64, actor: String, action: String, subject: String, details: String,
            previousHash: [UInt8], hash: [UInt8]
        ) {
            self.sequence = sequence
            self.milliseconds = milliseconds
            self.actor = actor
            self.action = action
            self.subject = subject
            self.details = details
            self.previousHash = previousHash
            self.hash = hash
        }

        /// An `audit_log` row read with its columns `seq, at_ms, actor, action, subject, details,
        /// prev_hash, hash`.
        package init(row: PostgresRow) throws {
            self.init(
                sequence: try row.decode("seq"), milliseconds: try row.decode("at_ms"),
                actor: try row.decode("actor"), action: try row.decode("action"),
                subject: try row.decode("subject"), details: try row.decode("details"),
                previousHash: try row.decode("prev_hash"), hash: try row.decode("hash"))
        }
    }

    /// Walks sealed entries in order, from the chain's start or from an archive anchor: the
    /// table's walk and an archive segment's walk check the same three things the same way.
    package struct ChainWalk: Sendable {
        /// The hash the next entry must link to.
        package private(set) var previous: [UInt8]
        /// The sequence number the next entry must carry.
        package private(set) var expectedSequence: Int64
        /// Entries that held.
        package private(set) var entries = 0

        /// A walk from the chain's first entry (`anchor` nil) or from the entry after `anchor`.
        package init(after anchor: AuditArchive.Anchor? = nil) {
            previous = anchor?.hash ?? AuditLog.genesis
            expectedSequence = (anchor?.sequence ?? 0) + 1
        }

        /// The last entry that held, as an anchor (nil before the first).
        package var last: AuditArchive.Anchor? {
            expectedSequence > 1 ? AuditArchive.Anchor(sequence: expectedSequence - 1, hash: previous) : nil
        }

        /// Checks `entry` against the walk so far; nil when it holds, else where and why not.
        package mutating func check(_ entry: SealedEntry) -> Verification? {
            guard entry.sequence == expectedSequence else {
                return Verification(
                    entries: entries, firstBrokenSequence: expectedSequence,
                    problem: "entry \(expectedSequence) is missing")
            }
            guard entry.previousHash == previous else {
                return Verification(
                    entries: entries, firstBrokenSequence: entry.sequence,
                    problem: "entry \(entry.sequence) does not link to its predecessor")
            }
            let hash = entryHash(
                previous: previous, sequence: entry.sequence, milliseconds: entry.milliseconds, actor: entry.actor,
                action: entry.action, subject: entry.subject, details: entry.details)
            guard entry.hash == hash else {
                return Verification(
                    entries: entries, firstBrokenSequence: entry.sequence,
                    problem: "entry \(entry.sequence) was altered")
            }
            previous = hash
            expectedSequence += 1
            entries += 1
            return nil
        }
    }

    /// Length-prefixed fields, so no two different entries serialise to the same bytes.
    package static func entryHash(
        previous: [UInt8], sequence: Int64, milliseconds: Int64, actor: String, action: String, subject: String,
        details: String
    ) -> [UInt8] {
        var bytes = previous
        for field in [String(sequence), String(milliseconds), actor, action, subject, details] {
            let utf8 = Array(field.utf8)
            bytes += Array(String(utf8.count).utf8) + [0x3A] + utf8
        }
        return SHA256.hash(bytes)
    }

    /// `details` as the JSON object stored (and later hashed) with an entry: keys sorted, no
    /// spaces, strings escaped as RFC 8259 requires and no more (``JSONText/appendString(_:to:)``).
    /// The chain hashes the stored text, so this need only be deterministic; for the ids and
    /// words details hold it is what `JSONEncoder` with sorted keys wrote before, which was 6 %
    /// of a TSP authorization's CPU.
    package static func canonicalJSON(_ details: [String: String]) -> String {
        var text = "{"
        for (index, key) in details.keys.sorted().enumerated() {
            if index > 0 { text.append(",") }
            JSONText.appendString(key, to: &text)
            text.append(":")
            JSONText.appendString(details[key]!, to: &text)
        }
        text.append("}")
        return text
    }
}

/// The sealer updated other rows than it locked: a second sealer bypassed the advisory lock.
package struct AuditSealError: Error, CustomStringConvertible {
    package let expected: Int
    package let updated: Int
    package var description: String { "audit seal updated \(updated) of \(expected) locked entries; nothing sealed" }
}
