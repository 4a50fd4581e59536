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
    /// - Throws: ``CommandInputError`` for a file that cannot be read or a header that is not
    ///   one (nothing is applied then); database errors as they come (the chunks committed stay).
    public static func run(
        file: URL, actor: String, now: Date, vault: PANVault, keys: ReissueSettings, database: PostgresPool,
        progressEvery: Int, progress: (Int) -> Void, notice: (String) -> Void = { _ in },
        badLine: (_ line: Int, _ reason: String) -> Void
    ) throws -> Summary {
        let run = try ChunkedCSVImport.run(
            file: file, lineLimit: 16 * 1024, chunkLines: chunkLines, skipComments: true, header: parseHeader,
            parse: { text, header in request(text, header: header, now: now) },
            apply: { (chunk: [CardReissueBatch.Line]) in
                let why: String
                do {
                    let applied = try database.withConnection { connection in
                        try connection.transaction { connection in
                            try CardReissueBatch.apply(
                                chunk, actor: actor, now: now, vault: vault, keys: keys, connection: connection)
                        }
                    }
                    if let applied { return applied }
                    why = "some concern the same card, new card or new PAN"
                } catch let error as PostgresError where error.refusesChunk {
                    // Another session wrote one of the chunk's cards or reissues since it was
                    // read: nothing of the chunk stays, and the lines go one by one below.
                    why = "another session's writes refused them together (\(error.code))"
                } catch let refusal as Refusal {
                    // Likewise (a reissue made meanwhile for one of the chunk's cards).
                    why = "another session's writes refused them together (\(refusal.code))"
                }
                notice("lines \(chunk[0].line)-\(chunk[chunk.count - 1].line) applied one by one: \(why)")
                return try database.withConnection { connection in
                    try connection.transaction { connection in
                        try chunk.map { entry in
                            try apply(
                                entry.item, actor: actor, now: now, vault: vault, keys: keys, connection: connection)
                        }
                    }
                }
            }, progressEvery: progressEvery, progress: progress, badLine: badLine)
        return Summary(reissued: run.applied, unchanged: run.unchanged, errors: run.errors)
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
