import Dispatch
import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdImport
import IssuerdPostgres
import IssuerdStorage

/// `issuerd cards reissue FILE.csv`: a month's renewals (or any reissues) from a CSV file,
/// streamed.
///
/// The file is read a line at a time and applied in chunks of ``chunkLines`` lines, each chunk in
/// one transaction, so memory holds one chunk whatever the file's size. A chunk is applied
/// set-wise (``CardReissueBatch``): a few reads for all its lines, the checks in memory, one
/// statement per table for the lines that pass; a bad line is left out, reported with its
/// number, while the others go on. A chunk whose lines touch each other, or that another
/// session's writes refuse as a whole, is applied again line by line, each in a savepoint. Each
/// line is what `POST /v1/admin/cards/{cardId}/reissue` does, with the same audit entries. A line without `new_card_id` gets
/// one derived from the old card and the new expiry, so running the same file again finds every
/// reissue made and changes nothing.
public enum CardReissueImport {
    /// The columns a file may have; the header names them, in any order.
    public static let columns = [
        "card_id", "reason", "expiration", "new_card_id", "account_number", "pan_sequence_number", "cardholder_name",
        "apply_at",
    ]

    /// Lines per transaction.
    static let chunkLines = 500

    /// What a run did.
    public struct Summary: Sendable, Equatable {
        public var reissued = 0
        public var unchanged = 0
        public var errors = 0
    }

    /// Applies `file` (``ChunkedCSVImport``), calling `badLine` for each line not applied, in
    /// line order, `progress` with the lines read every `progressEvery` lines, and `notice` for
    /// each chunk applied line by line (why, and its lines).
    ///
    /// With two connections in `database`'s pool, a chunk is read and decided on one while the
    /// chunk before it is written and committed on the other (``Pipeline``); with one, chunk after
    /// chunk.
    ///
    /// - Throws: ``CommandInputError`` for a file that cannot be read or a header that is not
    ///   one (nothing is applied then); database errors as they come (the chunks committed stay).
    public static func run(
        file: URL, actor: String, now: Date, vault: PANVault, keys: ReissueSettings, database: PostgresPool,
        progressEvery: Int, progress: (Int) -> Void, notice: (String) -> Void = { _ in },
        badLine: (_ line: Int, _ reason: String) -> Void
    ) throws -> Summary {
        let context = Context(actor: actor, now: now, vault: vault, keys: keys)
        func chunks(
            start: ([CardReissueBatch.Line]) throws -> () throws -> [ChunkedCSVImport.Outcome]
        ) throws -> Summary {
            let run = try ChunkedCSVImport.run(
                file: file, lineLimit: 16 * 1024, chunkLines: chunkLines, skipComments: true, header: parseHeader,
                parse: { text, header in request(text, header: header, now: now) }, start: start,
                progressEvery: progressEvery, progress: progress, badLine: badLine)
            return Summary(reissued: run.applied, unchanged: run.unchanged, errors: run.errors)
        }
        guard database.configuration.size >= 2 else {
            return try database.withConnection { connection in
                try chunks(start: { chunk in
                    let applied = context.applyChunk(chunk, connection: connection)
                    if let why = applied.notice { notice(why) }
                    let outcomes = try applied.outcomes.get()
                    return { outcomes }
                })
            }
        }
        // Each wait is called before this returns.
        return try withoutActuallyEscaping(notice) { notice in
            try database.withConnection { first in
                try database.withConnection { second in
                    let pipeline = Pipeline(context: context, connections: [first, second])
                    defer { pipeline.drain() }
                    return try chunks(start: { chunk in
                        let wait = try pipeline.start(chunk)
                        return {
                            let applied = wait()
                            if let why = applied.notice { notice(why) }
                            return try applied.outcomes.get()
                        }
                    })
                }
            }
        }
    }

    /// What every chunk of a run shares.
    struct Context: Sendable {
        var actor: String
        var now: Date
        var vault: PANVault
        var keys: ReissueSettings

        /// A chunk applied: each line's outcome, and why it went line by line when it did.
        struct Applied: Sendable {
            var outcomes: Result<[ChunkedCSVImport.Outcome], any Error>
            var notice: String?
        }

        /// Applies `chunk` in one transaction on `connection`, set-wise (``CardReissueBatch``) or,
        /// when its lines touch each other or another session's writes refuse it, line by line.
        func applyChunk(_ chunk: [CardReissueBatch.Line], connection: PostgresConnection) -> Applied {
            let why: String
            do {
                let applied = try connection.transaction { connection in
                    try CardReissueBatch.apply(
                        chunk, actor: actor, now: now, vault: vault, keys: keys, connection: connection)
                }
                if let applied { return Applied(outcomes: .success(applied)) }
                why = "some concern the same card, new card or new PAN"
            } catch {
                guard let reason = Self.refusal(error) else { return Applied(outcomes: .failure(error)) }
                why = reason
            }
            return lineByLine(chunk, why: why, connection: connection)
        }

        /// Why a set-wise chunk's failure lets its lines go one by one: another session wrote one
        /// of the chunk's cards or reissues since it was read (nothing of the chunk stays); nil
        /// for any other failure.
        static func refusal(_ error: any Error) -> String? {
            if let error = error as? PostgresError, error.refusesChunk {
                return "another session's writes refused them together (\(error.code))"
            }
            // Likewise (a reissue made meanwhile for one of the chunk's cards).
            if let refusal = error as? Refusal {
                return "another session's writes refused them together (\(refusal.code))"
            }
            return nil
        }

        /// `chunk`'s lines one by one, each in a savepoint, in one transaction.
        func lineByLine(_ chunk: [CardReissueBatch.Line], why: String, connection: PostgresConnection) -> Applied {
            let outcomes = Result {
                try connection.transaction { connection in
                    try chunk.map { entry in
                        try apply(entry.item, actor: actor, now: now, vault: vault, keys: keys, connection: connection)
                    }
                }
            }
            return Applied(
                outcomes: outcomes,
                notice: "lines \(chunk[0].line)-\(chunk[chunk.count - 1].line) applied one by one: \(why)")
        }
    }

    /// Two connections taking turns: a chunk is read and decided (``CardReissueBatch/prepare``)
    /// on the caller's thread while the chunk before it is written and committed on the writer's.
    /// Writes go in file order, one at a time. Two chunks that touch a common card id or new
    /// PAN would see each other's rows: the later one is read only once the earlier one is
    /// committed, so each chunk reads what every chunk before it wrote, as chunk after chunk.
    ///
    /// @unchecked Sendable: each connection is used by one thread at a time, handed from the
    /// caller (which reads on it) to the writer (which writes and commits on it) and back only
    /// once the caller waited for that write; `inFlight` is the caller's alone.
    final class Pipeline: @unchecked Sendable {
        private let context: Context
        private let connections: [PostgresConnection]
        private let writer = DispatchQueue(label: "issuerd.card-reissue.writer")
        private var turn = 0
        /// The chunk last handed to the writer: its names, and its end.
        private var inFlight: (touched: CardReissueBatch.Touched?, done: DispatchGroup)?

        init(context: Context, connections: [PostgresConnection]) {
            self.context = context
            self.connections = connections
        }

        /// Reads and decides `chunk` and hands its writes to the writer.
        ///
        /// - Returns: The wait for its outcomes. It must be called before `start` is called
        ///   twice more (the chunk's connection is used again then).
        func start(_ chunk: [CardReissueBatch.Line]) throws -> () -> Context.Applied {
            let handed = Handed(connection: connections[turn % connections.count])
            let connection = handed.connection
            turn += 1
            let names = try CardReissueBatch.names(chunk, vault: context.vault)
            if let inFlight, !Self.apart(names.touched, inFlight.touched) { inFlight.done.wait() }
            let prepared: CardReissueBatch.Prepared?
            do {
                try connection.beginTransaction()
                prepared = try CardReissueBatch.prepare(
                    chunk, names: names, now: context.now, vault: context.vault, keys: context.keys,
                    connection: connection)
            } catch {
                connection.rollbackQuietly()
                guard let why = Context.refusal(error) else { throw error }
                return handOver(names.touched) { [context] in
                    context.lineByLine(chunk, why: why, connection: handed.connection)
                }
            }
            guard let prepared else {
                connection.rollbackQuietly()
                return handOver(names.touched) { [context] in
                    context.lineByLine(
                        chunk, why: "some concern the same card, new card or new PAN", connection: handed.connection)
                }
            }
            return handOver(names.touched) { [context] in
                let connection = handed.connection
                do {
                    let outcomes = try CardReissueBatch.write(
                        prepared, actor: context.actor, now: context.now, connection: connection)
                    try connection.commitTransaction()
                    return Context.Applied(outcomes: .success(outcomes))
                } catch {
                    connection.rollbackQuietly()
                    guard let why = Context.refusal(error) else { return Context.Applied(outcomes: .failure(error)) }
                    return context.lineByLine(chunk, why: why, connection: connection)
                }
            }
        }

        /// Whether two chunks' names are known not to meet (a chunk whose lines touch each other
        /// has none: it is applied line by line, after the one before).
        private static func apart(_ one: CardReissueBatch.Touched?, _ other: CardReissueBatch.Touched?) -> Bool {
            guard let one, let other else { return false }
            return !one.meets(other)
        }

        /// Runs `work` on the writer, after the writes handed over before it.
        private func handOver(
            _ touched: CardReissueBatch.Touched?, _ work: @escaping @Sendable () -> Context.Applied
        ) -> () -> Context.Applied {
            let done = DispatchGroup()
            let result = Lock<Context.Applied?>(nil)
            done.enter()
            writer.async {
                let applied = work()
                result.withLock { $0 = applied }
                done.leave()
            }
            inFlight = (touched, done)
            return {
                done.wait()
                return result.withLock { $0! }
            }
        }

        /// Waits for the writes handed over (the connections go back to the pool after it).
        func drain() {
            writer.sync {}
        }

        /// A connection handed to the writer (see the class's note).
        private struct Handed: @unchecked Sendable {
            let connection: PostgresConnection
        }
    }

    /// One line in its own savepoint (a chunk whose lines touch each other, or that another
    /// session's writes refused as a whole): applied, unchanged when the same reissue exists already,
    /// or refused with the refusal's message (the savepoint rolled back).
    private static func apply(
        _ item: (oldCardID: String, request: CardReissue.Validated), actor: String, now: Date, vault: PANVault,
        keys: ReissueSettings, connection: PostgresConnection
    ) throws -> ChunkedCSVImport.Outcome {
        let exists = try connection.query(
            """
            SELECT 1 FROM card_reissues WHERE old_card_id = \(item.oldCardID) AND new_card_id = \(item.request.newCardID)
            """
        ).first
        if exists != nil { return .unchanged }
        try connection.execute(unsafeSQL: "SAVEPOINT reissue_line")
        do {
            guard
                try CardReissue.start(
                    item.request, oldCardID: item.oldCardID, actor: actor, now: now, vault: vault, keys: keys,
                    connection: connection) != nil
            else {
                try connection.execute(unsafeSQL: "ROLLBACK TO SAVEPOINT reissue_line")
                return .refused("no card \(item.oldCardID)")
            }
            try connection.execute(unsafeSQL: "RELEASE SAVEPOINT reissue_line")
            return .applied
        } catch let refusal as Refusal {
            try connection.execute(unsafeSQL: "ROLLBACK TO SAVEPOINT reissue_line")
            return .refused("\(refusal.code): \(refusal.message)")
        }
    }

    /// The header row: each column's position; the known columns only, each once, with
    /// `card_id`, `reason` and `expiration`.
    static func parseHeader(_ text: String, line: Int) throws -> [String: Int] {
        try ChunkedCSVImport.header(
            text, line: line, columns: columns,
            complete: { $0["card_id"] != nil && $0["reason"] != nil && $0["expiration"] != nil },
            requirement: "the header row must name card_id, reason and expiration")
    }

    /// One data line as a validated reissue of its card.
    static func request(
        _ text: String, header: [String: Int], now: Date
    ) -> Result<(oldCardID: String, request: CardReissue.Validated), CSVLine.Problem> {
        let cells: [String]
        switch ChunkedCSVImport.cells(text, header: header) {
        case .failure(let problem): return .failure(problem)
        case .success(let parsed): cells = parsed
        }
        func cell(_ name: String) -> String? {
            header[name].map { cells[$0].trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        guard let oldCardID = cell("card_id"), (try? AdminValidation.identifier(oldCardID, field: "card_id")) != nil
        else { return .failure(CSVLine.Problem("card_id must be a card id")) }
        let expiration = cell("expiration") ?? ""
        // The same line again names the same new card: a rerun finds it and changes nothing.
        let derived = CardRegistration.generatedID(SHA256.hash(Array("reissue:\(oldCardID):\(expiration)".utf8)))
        let body = CardReissueRequest(
            reason: cell("reason") ?? "",
            newCard: .init(
                cardId: cell("new_card_id") ?? derived, accountNumber: cell("account_number"), expiration: expiration,
                panSequenceNumber: cell("pan_sequence_number"), cardholderName: cell("cardholder_name")),
            applyAt: cell("apply_at"), fraudTokens: nil, notifyWallet: nil)
        do {
            return .success((oldCardID, try CardReissue.validate(body, now: now)))
        } catch let refusal as Refusal {
            return .failure(CSVLine.Problem("\(refusal.code): \(refusal.message)"))
        } catch {
            return .failure(CSVLine.Problem("not a valid reissue"))
        }
    }
}
