import Foundation
import IssuerdCore

/// A CSV file applied line by line in chunks, as `issuerd outcomes import` and `issuerd cards
/// reissue` read theirs.
///
/// The file is read a line at a time (``LineReader``): a header row naming the columns, then data
/// lines, each parsed into an item; every `chunkLines` items are handed to `apply` together (one
/// transaction, as the caller makes it), so memory holds one chunk whatever the file's size. A
/// line that does not parse, or that `apply` refuses, is reported with its number, in line order
/// within its chunk, and the others go on. Blank lines (and, when asked, lines starting with `#`)
/// are skipped.
package enum ChunkedCSVImport {
    /// What `apply` made of one item.
    package enum Outcome: Sendable, Equatable {
        /// Applied now.
        case applied
        /// Applied already (a rerun of the same file): nothing changed.
        case unchanged
        /// Refused, with the reason printed beside its line number.
        case refused(String)
    }

    /// What a run did.
    package struct Summary: Sendable, Equatable {
        package var applied = 0
        package var unchanged = 0
        package var errors = 0
        /// The data lines read (skipped lines not counted).
        package var lines = 0
    }

    /// Reads `file` and applies its lines.
    ///
    /// - Parameters:
    ///   - lineLimit: The longest line taken, in bytes; a longer one ends the run there (reported).
    ///   - header: The header row's column positions, or ``CommandInputError`` naming its line.
    ///   - parse: One data line as an item, or the reason it is refused.
    ///   - apply: A chunk's items, in line order; one outcome per item, in the same order.
    ///   - progress: Called with the data lines read every `progressEvery` lines, and at the end.
    /// - Throws: ``CommandInputError`` for a file that cannot be read or a header that is not one
    ///   (nothing is applied then); what `apply` throws (the chunks applied before stay).
    package static func run<Item>(
        file: URL, lineLimit: Int, chunkLines: Int, skipComments: Bool = false,
        header: (_ text: String, _ line: Int) throws -> [String: Int],
        parse: (_ text: String, _ header: [String: Int]) -> Result<Item, CSVLine.Problem>,
        apply: (_ chunk: [(line: Int, item: Item)]) throws -> [Outcome],
        progressEvery: Int = .max, progress: (Int) -> Void = { _ in },
        badLine: (_ line: Int, _ reason: String) -> Void
    ) throws -> Summary {
        try run(
            file: file, lineLimit: lineLimit, chunkLines: chunkLines, skipComments: skipComments, header: header,
            parse: parse,
            start: { chunk in
                let outcomes = try apply(chunk)
                return { outcomes }
            }, progressEvery: progressEvery, progress: progress, badLine: badLine)
    }

    /// Reads `file` and applies its lines, a chunk's work possibly overlapping the next's:
    /// `start` begins applying a chunk and answers how to wait for its outcomes. That wait is
    /// called once, after `start` was called with the next chunk (or at the end), so the caller
    /// may finish a chunk on another thread while the next one is read and begun; outcomes are
    /// reported chunk by chunk, in file order, as ``run(file:lineLimit:chunkLines:skipComments:header:parse:apply:progressEvery:progress:badLine:)``
    /// reports them.
    ///
    /// - Throws: As that one; when `start` throws, the chunk begun before is waited for and
    ///   reported first.
    package static func run<Item>(
        file: URL, lineLimit: Int, chunkLines: Int, skipComments: Bool = false,
        header: (_ text: String, _ line: Int) throws -> [String: Int],
        parse: (_ text: String, _ header: [String: Int]) -> Result<Item, CSVLine.Problem>,
        start: (_ chunk: [(line: Int, item: Item)]) throws -> () throws -> [Outcome],
        progressEvery: Int = .max, progress: (Int) -> Void = { _ in },
        badLine: (_ line: Int, _ reason: String) -> Void
    ) throws -> Summary {
        guard let handle = try? FileHandle(forReadingFrom: file) else {
            throw CommandInputError("cannot read \(file.path)")
        }
        defer { try? handle.close() }
        var reader = LineReader(handle: handle, limit: lineLimit)
        var columns: [String: Int]?
        var summary = Summary()
        var chunk: [(line: Int, item: Item)] = []
        var errors: [(line: Int, reason: String)] = []
        // The chunk begun and not yet reported: its lines, its lines refused by `parse`, its wait.
        var begun:
            (chunk: [(line: Int, item: Item)], errors: [(line: Int, reason: String)], wait: () throws -> [Outcome])?

        func report() throws {
            guard let (lines, refused, wait) = begun else { return }
            begun = nil
            var errors = refused
            for (entry, outcome) in zip(lines, try wait()) {
                switch outcome {
                case .applied: summary.applied += 1
                case .unchanged: summary.unchanged += 1
                case .refused(let reason): errors.append((entry.line, reason))
                }
            }
            for error in errors.sorted(by: { $0.line < $1.line }) { badLine(error.line, error.reason) }
            summary.errors += errors.count
        }

        func flush() throws {
            var wait: () throws -> [Outcome] = { [] }
            if !chunk.isEmpty {
                do {
                    wait = try start(chunk)
                } catch {
                    try report()
                    throw error
                }
            }
            try report()
            begun = (chunk, errors, wait)
            chunk.removeAll()
            errors.removeAll()
        }

        while true {
            let next: (Int, [UInt8])?
            do {
                next = try reader.next()
            } catch let error as LineReader.LineTooLong {
                if columns == nil { throw CommandInputError("line \(error.line): \(error.message)") }
                errors.append((error.line, error.message + "; the rest of the file was not read"))
                break
            }
            guard let (number, bytes) = next else { break }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                if columns == nil { throw CommandInputError("line \(number): not UTF-8 text") }
                errors.append((number, "not UTF-8 text"))
                continue
            }
            if text.allSatisfy({ $0 == " " || $0 == "," }) || (skipComments && text.hasPrefix("#")) { continue }
            guard let columns else {
                columns = try header(text, number)
                continue
            }
            summary.lines += 1
            if summary.lines % progressEvery == 0 { progress(summary.lines) }
            switch parse(text, columns) {
            case .failure(let problem): errors.append((number, problem.reason))
            case .success(let item): chunk.append((number, item))
            }
            if chunk.count >= chunkLines { try flush() }
        }
        guard columns != nil else {
            try report()
            throw CommandInputError("\(file.path) is empty: a header row is required")
        }
        try flush()
        try report()
        if progressEvery != .max, summary.lines % progressEvery != 0 { progress(summary.lines) }
        return summary
    }

    /// A header row: each column's position. The known `columns` only, each once; `complete`
    /// says whether the columns named are enough, else the run stops with `requirement`.
    package static func header(
        _ text: String, line: Int, columns: [String], complete: ([String: Int]) -> Bool, requirement: String
    ) throws -> [String: Int] {
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
        guard complete(positions) else { throw CommandInputError("line \(line): \(requirement)") }
        return positions
    }

    /// A data line's cells, as many as the header's columns.
    package static func cells(_ text: String, header: [String: Int]) -> Result<[String], CSVLine.Problem> {
        switch CSVLine.cells(text) {
        case .failure(let problem): return .failure(problem)
        case .success(let cells) where cells.count != header.count:
            return .failure(CSVLine.Problem("\(cells.count) column(s), the header has \(header.count)"))
        case .success(let cells): return .success(cells)
        }
    }
}
