import Dispatch
import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import IssuerdStorage
import IssuerdWire
import Synchronization

/// `issuerd cards import FILE.jsonl`: one `CardCreateRequest`-shaped JSON object per line, with an
/// optional `customer` object (`phoneNumber`, `email`, `phoneChangedAt`, `emailChangedAt`,
/// `addressChangedAt`) that creates or updates the card's customer first.
///
/// The whole file is one transaction: a bad record stops the import with its line number and
/// nothing of the file stays. Blank lines and lines starting with `#` are skipped.
///
/// How it goes at database speed: the file is read in chunks of a few thousand lines; each chunk
/// is validated, sealed and fingerprinted on every core into `COPY` rows, then written by a
/// second thread (``ChunkWriter``) while the next chunk is being encoded: one read of the
/// chunk's customers, their upserts applied in issuerd, new customers inserted from a `COPY`'d
/// temporary table, then `COPY` straight into cards and status history. Memory holds about
/// three chunks, whatever the file's size.
/// The audit log gets one `cards.imported` entry naming the counts and a SHA-256 chained over
/// the imported card ids in file order (one chained entry per card would serialise every other
/// audited writer, the TSP path included, behind the import).
public enum CardImport {
    /// The longest line accepted; a card record is a few hundred bytes.
    public static let maximumLineBytes = 16 * 1024
    /// Lines encoded per worker and chunk: big enough that a chunk's COPY write dwarfs the
    /// hand-over, small enough that two chunks in flight stay a few megabytes.
    package static let linesPerSlice = 4096
    /// The phase told last, just before the transaction's COMMIT is sent.
    public static let committingPhase = "committing"
    /// The most lines in one chunk (of the three alive at once: read, encoded, written) …
    package static let maximumChunkLines = 64 * 1024
    /// … and the most bytes of lines: memory stays flat whatever `workers` or the lines' length.
    package static let maximumChunkBytes = 32 * 1024 * 1024

    /// A customer the import had just seen stored was gone when its chunk was planned again
    /// (nothing deletes customers; a defect if it happens): the import stops, nothing kept.
    package struct CustomersVanished: Error, CustomStringConvertible {
        package var description: String {
            "a customer of this import disappeared while its chunk was written; nothing imported"
        }
    }

    /// What an import did.
    public struct Summary: Sendable, Equatable {
        /// Cards registered.
        public var cards: Int
        /// Customers created.
        public var customersCreated: Int
        /// Customer objects that updated an existing customer (or one created earlier in the file).
        public var customersUpdated: Int

        /// Creates the value from every stored property.
        package init(cards: Int, customersCreated: Int, customersUpdated: Int) {
            self.cards = cards
            self.customersCreated = customersCreated
            self.customersUpdated = customersUpdated
        }
    }

    /// The optional `customer` member of a line.
    package struct CustomerFields: Decodable, Equatable {
        package var customerId: String?
        package var phoneNumber: String?
        package var email: String?
        package var phoneChangedAt: String?
        package var emailChangedAt: String?
        package var addressChangedAt: String?
    }

    /// Imports `file`.
    ///
    /// - Parameters:
    ///   - actor: The audit actor, e.g. `cli:alice`.
    ///   - progressEvery: Call `progress` each time this many more records were encoded and sent.
    ///   - workers: Threads validating and sealing; defaults to the number of cores.
    ///   - phase: Told when the import moves on after streaming (checking, writing, committing).
    /// - Throws: ``CommandInputError`` naming the line of the first bad record (nothing is
    ///   imported then); ``PostgresError`` for a database failure (nothing is imported either);
    ///   `CustomersVanished` if a customer is deleted under the import (nothing deletes them).
    public static func run(
        file: URL, actor: String, now: Date, vault: PANVault, database: PostgresPool, progressEvery: Int = 1000,
        workers: Int = ProcessInfo.processInfo.activeProcessorCount, progress: (Int) -> Void = { _ in },
        phase: (String) -> Void = { _ in }
    ) throws -> Summary {
        guard let handle = try? FileHandle(forReadingFrom: file) else {
            throw CommandInputError("cannot read \(file.path)")
        }
        defer { try? handle.close() }
        let name = file.lastPathComponent
        var reader = LineReader(handle: handle, limit: maximumLineBytes)
        let workers = max(1, workers)
        return try database.withConnection { connection in
            // Read committed, which the customers' second read relies on (it sees what the API
            // committed since the first).
            try connection.transaction(isolation: .readCommitted) { connection in
                // Connections plan every execution anew (force_custom_plan, for the provisioning
                // statements); that includes the foreign-key checks' internal queries, run once per
                // row here: planning each check tripled the cost of writing a card. The setting
                // ends with the transaction.
                try connection.execute(unsafeSQL: "SET LOCAL plan_cache_mode = auto")
                try connection.execute(unsafeSQL: createCustomerUpdates)
                let writer = ChunkWriter(connection: connection, now: now)
                defer { writer.drain() }
                var digest = [UInt8](repeating: 0, count: 32)
                var failure: LineFailure?
                var sent = 0
                var reported = 0
                var ended = false
                // A chunk is bounded in lines and in bytes, whatever `workers` asks for.
                let chunkLines = min(workers * linesPerSlice, maximumChunkLines)
                while !ended, failure == nil, !writer.hasStopped {
                    var lines: [(Int, [UInt8])] = []
                    lines.reserveCapacity(chunkLines)
                    var bytes = 0
                    // A line too long to read ends the reading, but the lines before it are still
                    // checked: the first bad record may be one of them (or in the database's answer).
                    var tooLong: LineFailure?
                    while lines.count < chunkLines, bytes < maximumChunkBytes {
                        let line: (Int, [UInt8])?
                        do {
                            line = try reader.next()
                        } catch let error as LineReader.LineTooLong {
                            tooLong = LineFailure(line: error.line, message: error.message)
                            line = nil
                        }
                        guard let line else {
                            ended = true
                            break
                        }
                        bytes += line.1.count
                        lines.append(line)
                    }
                    var chunk = Chunk()
                    for slice in try encodeInParallel(lines, workers: workers, now: now, vault: vault) {
                        for cardID in slice.cardIDs { digest = SHA256.hash(digest + Array(cardID.utf8)) }
                        chunk.cards += slice.count
                        chunk.slices.append(slice)
                        if let lineFailure = slice.failure {
                            failure = lineFailure
                            break
                        }
                    }
                    if failure == nil { failure = tooLong }
                    if chunk.cards > 0 { try writer.submit(chunk) }
                    sent += chunk.cards
                    while sent - reported >= max(progressEvery, 1) {
                        reported += max(progressEvery, 1)
                        progress(reported)
                    }
                }
                phase("waiting for the last chunks")
                let written = try writer.finish()
                // The database refuses only lines sent before the first line refused here (none
                // after it is sent), so its refusal, if any, is the file's first bad record.
                if let refused = written.refused {
                    throw CommandInputError("\(name):\(refused.line): \(refused.message)")
                }
                if let failure { throw CommandInputError("\(name):\(failure.line): \(failure.message)") }
                let summary = Summary(
                    cards: written.cards, customersCreated: written.customersCreated,
                    customersUpdated: written.customersUpdated)
                try AuditLog.append(
                    actor: actor, action: "cards.imported", subject: "file:\(name)",
                    details: [
                        "cards": String(summary.cards), "customersCreated": String(summary.customersCreated),
                        "customersUpdated": String(summary.customersUpdated),
                        "cardIdsSHA256": BinaryEncoding.hexString(digest),
                    ],
                    at: now, connection: connection)
                phase(committingPhase)
                return summary
            }
        }
    }

    /// The encoded cards of consecutive lines, in file order.
    package struct Chunk: Sendable {
        package var slices: [EncodedSlice] = []
        package var cards = 0
    }

    /// Encodes `lines` in `workers` contiguous slices at once; slices keep file order.
    private static func encodeInParallel(
        _ lines: [(Int, [UInt8])], workers: Int, now: Date, vault: PANVault
    ) throws -> [EncodedSlice] {
        // An empty file, or a last read that found only the end of the file (a line count that
        // is a multiple of the chunk size), has nothing to encode: a zero stride would trap.
        guard !lines.isEmpty else { return [] }
        let size = (lines.count + max(workers, 1) - 1) / max(workers, 1)
        let ranges = stride(from: 0, to: lines.count, by: size).map { $0..<min($0 + size, lines.count) }
        let results = Lock<[Int: Result<EncodedSlice, Error>]>([:])
        let input = SendableLines(lines: lines)
        DispatchQueue.concurrentPerform(iterations: ranges.count) { index in
            let result = Result { try encode(input.lines[ranges[index]], now: now, vault: vault) }
            results.withLock { $0[index] = result }
        }
        return try results.withLock { all in try ranges.indices.map { try all[$0]!.get() } }
    }
}

/// @unchecked Sendable: the lines are read by the workers only while the caller waits for them,
/// and never written then.
private struct SendableLines: @unchecked Sendable {
    let lines: [(Int, [UInt8])]
}

/// Writes chunks into the database on one background thread, in order, at most two chunks
/// ahead of the thread encoding them, so the server's work on a chunk (its customers, cards,
/// history) overlaps the encoding of the next.
///
/// Each chunk: read its customers, apply its customer objects to them in file order, stop at
/// the first card without a customer, write the customers (read and planned again when the API
/// created one of the new ones meanwhile), `COPY` the cards before that one and their history.
/// A chunk the database refuses stops the writer (later chunks are dropped) with the refused line.
///
/// @unchecked Sendable: the connection is used only on `queue` between the first ``submit(_:)``
/// and ``finish()``/``drain()``, while the thread that owns it waits in there before using it
/// again; the mutable state is guarded by a Lock.
private final class ChunkWriter: @unchecked Sendable {
    struct Outcome: Sendable {
        var cards = 0
        var customersCreated = 0
        var customersUpdated = 0
        var refused: CardImport.LineFailure?
        var error: (any Error)?
    }

    private let connection: PostgresConnection
    private let now: Date
    private let queue = DispatchQueue(label: "issuerd.card-import.writer")
    private let slots = DispatchSemaphore(value: 2)
    private let outcome = Lock(Outcome())

    init(connection: PostgresConnection, now: Date) {
        self.connection = connection
        self.now = now
    }

    /// Whether a chunk was refused or failed: sending more is pointless.
    var hasStopped: Bool { outcome.withLock { $0.refused != nil || $0.error != nil } }

    /// Queues `chunk` after the ones queued before; waits while two chunks are pending.
    ///
    /// - Throws: The database error of an earlier chunk.
    func submit(_ chunk: CardImport.Chunk) throws {
        if let error = outcome.withLock({ $0.error }) { throw error }
        slots.wait()
        queue.async {
            defer { self.slots.signal() }
            guard !self.hasStopped else { return }
            do {
                let written = try self.write(chunk)
                self.outcome.withLock {
                    $0.cards += written.cards
                    $0.customersCreated += written.customersCreated
                    $0.customersUpdated += written.customersUpdated
                    $0.refused = written.refused
                }
            } catch {
                self.outcome.withLock { $0.error = error }
            }
        }
    }

    private func write(_ chunk: CardImport.Chunk) throws -> Outcome {
        var (stored, known, stampedNow) = try CardImport.storedCustomers(chunk, now: now, connection: connection)
        var plan = CardImport.planCustomers(chunk, stored: stored, known: known, stampedNow: stampedNow, now: now)
        let created = try CardImport.writeCustomers(plan, now: now, connection: connection)
        if created < plan.created.count {
            // Some were created through the API since the read: every new customer of the first
            // plan exists now, so the second plan, stopping where the first did, applies their
            // lines to the stored rows and creates none.
            let missingAt = plan.firstMissing
            (stored, known, stampedNow) = try CardImport.storedCustomers(chunk, now: now, connection: connection)
            plan = CardImport.planCustomers(
                chunk, stored: stored, known: known, stampedNow: stampedNow, missingAt: missingAt, now: now)
            guard plan.created.isEmpty else { throw CardImport.CustomersVanished() }
            _ = try CardImport.writeCustomers(plan, now: now, connection: connection)
        }
        let count = plan.firstMissing ?? chunk.cards
        // A refused card comes before the first card without a customer (only those are sent).
        if let refused = try CardImport.writeCards(chunk, count: count, connection: connection) {
            return Outcome(refused: .init(line: chunk.line(at: refused.index), message: refused.problem.message))
        }
        if let missing = plan.firstMissing {
            return Outcome(
                refused: .init(line: chunk.line(at: missing), message: CardImport.LineProblem.customerNotFound.message))
        }
        return Outcome(cards: count, customersCreated: created, customersUpdated: plan.objects - created)
    }

    /// Waits until every queued chunk was written.
    ///
    /// - Returns: The totals, and the first refused line if a chunk was refused.
    /// - Throws: The first database error.
    func finish() throws -> Outcome {
        queue.sync {}
        let result = outcome.withLock { $0 }
        if let error = result.error { throw error }
        return result
    }

    /// Waits for the queue without reporting (for the error path).
    func drain() { queue.sync {} }
}
