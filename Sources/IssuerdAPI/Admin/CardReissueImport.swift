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
/// one transaction with a savepoint per line, so memory holds one chunk whatever the file's size
/// and a bad line is rolled back alone, reported with its number, while the others go on. Each
/// line is what `POST /v1/admin/cards/{cardId}/reissue` does. A line without `new_card_id` gets
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

    /// Applies `file`, calling `badLine` for each line not applied, in line order, and `progress`
    /// with the lines read every `progressEvery` lines.
    ///
    /// - Throws: ``CommandInputError`` for a file that cannot be read or a header that is not
    ///   one (nothing is applied then); database errors as they come (the chunks committed stay).
    public static func run(
        file: URL, actor: String, now: Date, vault: PANVault, keys: ReissueSettings, database: PostgresPool,
        progressEvery: Int, progress: (Int) -> Void, badLine: (_ line: Int, _ reason: String) -> Void
    ) throws -> Summary {
        guard let handle = try? FileHandle(forReadingFrom: file) else {
            throw CommandInputError("cannot read \(file.path)")
        }
        defer { try? handle.close() }
        var reader = LineReader(handle: handle, limit: 16 * 1024)
        var header: [String: Int]?
        var summary = Summary()
        var chunk: [(line: Int, request: CardReissue.Validated, oldCardID: String)] = []
        var errors: [(line: Int, reason: String)] = []
        var read = 0

        func flush() throws {
            var outcomes: [(line: Int, applied: Bool?, reason: String?)] = []
            if !chunk.isEmpty {
                try database.withConnection { connection in
                    try connection.transaction { connection in
                        outcomes = []
                        for item in chunk {
                            outcomes.append(
                                try apply(
                                    item, actor: actor, now: now, vault: vault, keys: keys, connection: connection))
                        }
                    }
                }
            }
            for outcome in outcomes {
                switch outcome.applied {
                case true?: summary.reissued += 1
                case false?: summary.unchanged += 1
                case nil: errors.append((outcome.line, outcome.reason ?? "refused"))
                }
            }
            for error in errors.sorted(by: { $0.line < $1.line }) { badLine(error.line, error.reason) }
            summary.errors += errors.count
            chunk.removeAll(keepingCapacity: true)
            errors.removeAll(keepingCapacity: true)
        }

        while true {
            let next: (Int, [UInt8])?
            do {
                next = try reader.next()
            } catch let error as LineReader.LineTooLong {
                if header == nil { throw CommandInputError("line \(error.line): \(error.message)") }
                errors.append((error.line, error.message + "; the rest of the file was not read"))
                break
            }
            guard let (number, bytes) = next else { break }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                if header == nil { throw CommandInputError("line \(number): not UTF-8 text") }
                errors.append((number, "not UTF-8 text"))
                continue
            }
            if text.allSatisfy({ $0 == " " || $0 == "," }) || text.hasPrefix("#") { continue }
            guard let header else {
                header = try parseHeader(text, line: number)
                continue
            }
            read += 1
            if read % progressEvery == 0 { progress(read) }
            switch request(text, header: header, now: now) {
            case .failure(let problem): errors.append((number, problem.reason))
            case .success(let (oldCardID, validated)): chunk.append((number, validated, oldCardID))
            }
            if chunk.count >= chunkLines { try flush() }
        }
        guard header != nil else { throw CommandInputError("\(file.path) is empty: a header row is required") }
        try flush()
        if read % progressEvery != 0 { progress(read) }
        return summary
    }

    /// One line in its own savepoint: true when reissued, false when the same reissue exists
    /// already, nil with the refusal's message when refused (the savepoint rolled back).
    private static func apply(
        _ item: (line: Int, request: CardReissue.Validated, oldCardID: String), actor: String, now: Date,
        vault: PANVault, keys: ReissueSettings, connection: PostgresConnection
    ) throws -> (line: Int, applied: Bool?, reason: String?) {
        let exists = try connection.query(
            """
            SELECT 1 FROM card_reissues WHERE old_card_id = \(item.oldCardID) AND new_card_id = \(item.request.newCardID)
            """
        ).first
        if exists != nil { return (item.line, false, nil) }
        try connection.execute(unsafeSQL: "SAVEPOINT reissue_line")
        do {
            guard
                try CardReissue.start(
                    item.request, oldCardID: item.oldCardID, actor: actor, now: now, vault: vault, keys: keys,
                    connection: connection) != nil
            else {
                try connection.execute(unsafeSQL: "ROLLBACK TO SAVEPOINT reissue_line")
                return (item.line, nil, "no card \(item.oldCardID)")
            }
            try connection.execute(unsafeSQL: "RELEASE SAVEPOINT reissue_line")
            return (item.line, true, nil)
        } catch let refusal as Refusal {
            try connection.execute(unsafeSQL: "ROLLBACK TO SAVEPOINT reissue_line")
            return (item.line, nil, "\(refusal.code): \(refusal.message)")
        }
    }

    /// The header row: each column's position; the known columns only, each once, with
    /// `card_id`, `reason` and `expiration`.
    static func parseHeader(_ text: String, line: Int) throws -> [String: Int] {
        guard case .success(let cells) = CSVLine.cells(text) else {
            throw CommandInputError("line \(line): the header row is not CSV")
        }
        var positions: [String: Int] = [:]
        for (index, cell) in cells.enumerated() {
            let name = cell.trimmingCharacters(in: .whitespaces).lowercased()
            guard columns.contains(name) else {
                throw CommandInputError(
                    "line \(line): unknown column '\(name.prefix(40))' (columns: \(columns.joined(separator: ", ")))")
            }
            guard positions[name] == nil else { throw CommandInputError("line \(line): column '\(name)' twice") }
            positions[name] = index
        }
        guard positions["card_id"] != nil, positions["reason"] != nil, positions["expiration"] != nil else {
            throw CommandInputError("line \(line): the header row must name card_id, reason and expiration")
        }
        return positions
    }

    /// One data line as a validated reissue of its card.
    static func request(
        _ text: String, header: [String: Int], now: Date
    ) -> Result<(String, CardReissue.Validated), CSVLine.Problem> {
        let cells: [String]
        switch CSVLine.cells(text) {
        case .failure(let problem): return .failure(problem)
        case .success(let parsed): cells = parsed
        }
        guard cells.count == header.count else {
            return .failure(CSVLine.Problem("\(cells.count) column(s), the header has \(header.count)"))
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
