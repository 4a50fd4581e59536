import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdStorage

/// `issuerd outcomes import FILE.csv`: a dispute system's export of outcomes, streamed.
///
/// The file is read a line at a time (``LineReader``) and recorded in chunks of
/// ``OutcomeStore/batchLimit`` lines, each chunk in one transaction, so memory holds one chunk
/// whatever the file's size. Each line is recorded whole or not at all; a bad line is reported
/// with its number and the others go on. A report already kept is not recorded again, so
/// importing the same file twice records nothing new.
package enum OutcomeImport {
    /// The columns a file may have; the header names them, in any order.
    package static let columns = [
        "attempt_id", "token_reference", "outcome", "source", "reported_at", "amount_lost", "currency", "note",
    ]

    /// What an import did.
    package struct Summary: Sendable, Equatable {
        package var recorded = 0
        package var unchanged = 0
        package var errors = 0
    }

    /// Imports `file` (``ChunkedCSVImport``), calling `badLine` for each line not recorded, in
    /// line order.
    ///
    /// - Throws: ``CommandInputError`` for a file that cannot be read or a header that is not
    ///   one (nothing is recorded then); database errors as they come.
    package static func run(
        file: URL, actor: String, now: Date, database: PostgresPool,
        badLine: (_ line: Int, _ reason: String) -> Void
    ) throws -> Summary {
        let run = try ChunkedCSVImport.run(
            file: file, lineLimit: 64 * 1024, chunkLines: OutcomeStore.batchLimit, header: parseHeader,
            parse: { text, header in
                fields(text, header: header).flatMap { fields in
                    OutcomeReport.validate(fields, now: now).mapError { CSVLine.Problem($0.message) }
                }
            },
            apply: { (chunk: [(line: Int, item: OutcomeReport)]) -> [ChunkedCSVImport.Outcome] in
                let results = try database.withConnection { connection in
                    try connection.transaction { connection in
                        try OutcomeStore.record(chunk.map { $0.item }, actor: actor, now: now, connection: connection)
                    }
                }
                return results.map { result -> ChunkedCSVImport.Outcome in
                    switch result {
                    case .recorded: .applied
                    case .unchanged: .unchanged
                    case .refused(let error): .refused(error.message)
                    }
                }
            }, badLine: badLine)
        return Summary(recorded: run.applied, unchanged: run.unchanged, errors: run.errors)
    }

    /// The header row: each column's position. The known columns only, each once, with
    /// `outcome`, `source` and an id column.
    static func parseHeader(_ text: String, line: Int) throws -> [String: Int] {
        try ChunkedCSVImport.header(
            text, line: line, columns: columns,
            complete: {
                $0["outcome"] != nil && $0["source"] != nil && ($0["attempt_id"] != nil || $0["token_reference"] != nil)
            },
            requirement: "the header row must name outcome, source and attempt_id or token_reference")
    }

    /// One data line's fields by the header's columns.
    static func fields(_ text: String, header: [String: Int]) -> Result<OutcomeReport.Fields, CSVLine.Problem> {
        ChunkedCSVImport.cells(text, header: header).map { cells in
            func cell(_ name: String) -> String? {
                header[name].map { cells[$0].trimmingCharacters(in: .whitespaces) }
            }
            return OutcomeReport.Fields(
                attemptID: cell("attempt_id"), tokenReference: cell("token_reference"), outcome: cell("outcome"),
                source: cell("source"), reportedAt: cell("reported_at"), amountLost: cell("amount_lost"),
                currency: cell("currency"), note: cell("note"))
        }
    }
}

/// One line of RFC 4180 CSV: cells separated by commas, a cell in double quotes may hold commas
/// and doubled quotes. A quoted cell cannot span lines (a note is one line).
package enum CSVLine {
    /// Why a line is not CSV.
    package struct Problem: Error {
        package var reason: String
        package init(_ reason: String) { self.reason = reason }
    }

    package static func cells(_ text: String) -> Result<[String], Problem> {
        var cells: [String] = []
        var current = ""
        var quoted = false
        var wasQuoted = false
        var iterator = text.makeIterator()
        while let character = iterator.next() {
            if quoted {
                if character == "\"" {
                    // A doubled quote is one quote; a single one ends the cell.
                    var lookahead = iterator
                    if lookahead.next() == "\"" {
                        current.append("\"")
                        iterator = lookahead
                    } else {
                        quoted = false
                    }
                } else {
                    current.append(character)
                }
            } else if character == "," {
                cells.append(current)
                current = ""
                wasQuoted = false
            } else if character == "\"" {
                guard current.allSatisfy({ $0 == " " }), !wasQuoted else {
                    return .failure(Problem("a quote inside an unquoted cell (quote the whole cell)"))
                }
                current = ""
                quoted = true
                wasQuoted = true
            } else {
                if wasQuoted, character != " " { return .failure(Problem("text after a quoted cell's closing quote")) }
                current.append(character)
            }
        }
        guard !quoted else { return .failure(Problem("a quoted cell is not closed on its line")) }
        cells.append(current)
        return .success(cells)
    }
}
