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

    /// Imports `file`, calling `badLine` for each line not recorded, in line order.
    ///
    /// - Throws: ``CommandInputError`` for a file that cannot be read or a header that is not
    ///   one (nothing is recorded then); database errors as they come.
    package static func run(
        file: URL, actor: String, now: Date, database: PostgresPool,
        badLine: (_ line: Int, _ reason: String) -> Void
    ) throws -> Summary {
        guard let handle = try? FileHandle(forReadingFrom: file) else {
            throw CommandInputError("cannot read \(file.path)")
        }
        defer { try? handle.close() }
        var reader = LineReader(handle: handle, limit: 64 * 1024)
        var header: [String: Int]?
        var summary = Summary()
        var chunk: [(line: Int, report: OutcomeReport)] = []
        var chunkErrors: [(line: Int, reason: String)] = []

        func flush() throws {
            if !chunk.isEmpty {
                let applied = try database.withConnection { connection in
                    try connection.transaction { connection in
                        try OutcomeStore.record(chunk.map(\.report), actor: actor, now: now, connection: connection)
                    }
                }
                for (item, result) in zip(chunk, applied) {
                    switch result {
                    case .recorded: summary.recorded += 1
                    case .unchanged: summary.unchanged += 1
                    case .refused(let error): chunkErrors.append((item.line, error.message))
                    }
                }
            }
            for error in chunkErrors.sorted(by: { $0.line < $1.line }) { badLine(error.line, error.reason) }
            summary.errors += chunkErrors.count
            chunk.removeAll(keepingCapacity: true)
            chunkErrors.removeAll(keepingCapacity: true)
        }

        while true {
            let next: (Int, [UInt8])?
            do {
                next = try reader.next()
            } catch let error as LineReader.LineTooLong {
                if header == nil { throw CommandInputError("line \(error.line): \(error.message)") }
                chunkErrors.append((error.line, error.message + "; the rest of the file was not read"))
                break
            }
            guard let (number, bytes) = next else { break }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                if header == nil { throw CommandInputError("line \(number): not UTF-8 text") }
                chunkErrors.append((number, "not UTF-8 text"))
                continue
            }
            if text.allSatisfy({ $0 == " " || $0 == "," }) { continue }
            guard let header else {
                header = try parseHeader(text, line: number)
                continue
            }
            switch fields(text, header: header) {
            case .failure(let problem): chunkErrors.append((number, problem.reason))
            case .success(let fields):
                switch OutcomeReport.validate(fields, now: now) {
                case .success(let report): chunk.append((number, report))
                case .failure(let error): chunkErrors.append((number, error.message))
                }
            }
            if chunk.count >= OutcomeStore.batchLimit { try flush() }
        }
        guard header != nil else { throw CommandInputError("\(file.path) is empty: a header row is required") }
        try flush()
        return summary
    }

    /// The header row: each column's position. The known columns only, each once, with
    /// `outcome`, `source` and an id column.
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
        guard positions["outcome"] != nil, positions["source"] != nil,
            positions["attempt_id"] != nil || positions["token_reference"] != nil
        else {
            throw CommandInputError(
                "line \(line): the header row must name outcome, source and attempt_id or token_reference")
        }
        return positions
    }

    /// One data line's fields by the header's columns.
    static func fields(_ text: String, header: [String: Int]) -> Result<OutcomeReport.Fields, CSVLine.Problem> {
        let cells: [String]
        switch CSVLine.cells(text) {
        case .failure(let problem): return .failure(problem)
        case .success(let parsed): cells = parsed
        }
        guard cells.count == header.count else {
            return .failure(CSVLine.Problem("\(cells.count) column(s), the header has \(header.count)"))
        }
        func cell(_ name: String) -> String? {
            header[name].map { cells[$0].trimmingCharacters(in: .whitespaces) }
        }
        return .success(
            OutcomeReport.Fields(
                attemptID: cell("attempt_id"), tokenReference: cell("token_reference"), outcome: cell("outcome"),
                source: cell("source"), reportedAt: cell("reported_at"), amountLost: cell("amount_lost"),
                currency: cell("currency"), note: cell("note")))
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
