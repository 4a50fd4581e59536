import Foundation
import IssuerdCrypto
import IssuerdHTTP
import IssuerdPostgres
import IssuerdWire

/// `issuerd cards import FILE.jsonl`: one `CardCreateRequest`-shaped JSON object per line, with an
/// optional `customer` object (`phoneNumber`, `email`, `phoneChangedAt`, `emailChangedAt`,
/// `addressChangedAt`) that creates or updates the card's customer first.
///
/// The whole file is one transaction: a bad record stops the import with its line number and
/// nothing of the file stays. Blank lines and lines starting with `#` are skipped. Every card and
/// customer gets the same audit entry as through the API, plus one `cards.imported` summary.
public enum CardImport {
    /// The longest line accepted; a card record is a few hundred bytes.
    public static let maximumLineBytes = 16 * 1024

    /// What an import did.
    public struct Summary: Sendable, Equatable {
        /// Cards registered.
        public var cards: Int
        /// Customers created.
        public var customersCreated: Int
        /// Customers updated.
        public var customersUpdated: Int
    }

    /// The optional `customer` member of a line.
    struct CustomerFields: Decodable {
        var customerId: String?
        var phoneNumber: String?
        var email: String?
        var phoneChangedAt: String?
        var emailChangedAt: String?
        var addressChangedAt: String?
    }

    struct Line: Decodable {
        var customer: CustomerFields?
    }

    /// Imports `file`.
    ///
    /// - Parameters:
    ///   - actor: The audit actor, e.g. `cli:alice`.
    ///   - progressEvery: Call `progress` after every this many records.
    /// - Throws: ``CommandInputError`` naming the line of the first bad record (nothing is
    ///   imported then); ``PostgresError`` for a database failure.
    public static func run(
        file: URL, actor: String, now: Date, vault: PANVault, database: PostgresPool, progressEvery: Int = 1000,
        progress: (Int) -> Void = { _ in }
    ) throws -> Summary {
        guard let handle = try? FileHandle(forReadingFrom: file) else { throw CommandInputError("cannot read \(file.path)") }
        defer { try? handle.close() }
        var reader = LineReader(handle: handle, limit: maximumLineBytes)
        return try database.withConnection { connection in
            try connection.transaction { connection in
                var summary = Summary(cards: 0, customersCreated: 0, customersUpdated: 0)
                while let (number, bytes) = try reader.next() {
                    let trimmed = bytes.drop { $0 == 0x20 || $0 == 0x09 }
                    if trimmed.isEmpty || trimmed.first == 0x23 { continue }
                    do {
                        try importLine(Array(bytes), actor: actor, now: now, vault: vault, connection: connection, summary: &summary)
                    } catch let error as HTTPError {
                        throw CommandInputError("\(file.lastPathComponent):\(number): \(error.message)")
                    } catch let error as PostgresError where error.code != .unavailable {
                        throw CommandInputError("\(file.lastPathComponent):\(number): database refused the record (\(error.code))")
                    }
                    if summary.cards % max(progressEvery, 1) == 0 { progress(summary.cards) }
                }
                try AuditLog.append(
                    actor: actor, action: "cards.imported", subject: "file:\(file.lastPathComponent)",
                    details: [
                        "cards": String(summary.cards), "customersCreated": String(summary.customersCreated),
                        "customersUpdated": String(summary.customersUpdated),
                    ],
                    at: now, connection: connection)
                return summary
            }
        }
    }

    private static func importLine(
        _ bytes: [UInt8], actor: String, now: Date, vault: PANVault, connection: PostgresConnection, summary: inout Summary
    ) throws {
        // The same decoding as the API: errors name the field, never the value.
        let request = HTTPRequest(method: .post, path: "/import", headers: ["Content-Type": "application/json"], body: bytes)
        let card = try request.decodeJSON(CardCreateRequest.self)
        if let fields = try request.decodeJSON(Line.self).customer {
            if let id = fields.customerId, id != card.customerId {
                throw AdminValidation.invalid("customer.customerId", "must equal customerId when given")
            }
            let record = try CustomerAdministration.validate(
                CustomerUpsertRequest(
                    customerId: card.customerId, phoneNumber: fields.phoneNumber, email: fields.email, phoneChangedAt: fields.phoneChangedAt,
                    emailChangedAt: fields.emailChangedAt, addressChangedAt: fields.addressChangedAt))
            let (_, created) = try CustomerAdministration.upsert(record, actor: actor, now: now, connection: connection)
            if created { summary.customersCreated += 1 } else { summary.customersUpdated += 1 }
        }
        let validated = try CardRegistration.validate(card, now: now)
        _ = try CardRegistration.register(validated, actor: actor, now: now, vault: vault, connection: connection)
        summary.cards += 1
    }
}

/// Reads `\n`-separated lines of bounded length from a file without loading it whole.
struct LineReader {
    let handle: FileHandle
    let limit: Int
    private var buffer: [UInt8] = []
    private var lineNumber = 0
    private var finished = false

    init(handle: FileHandle, limit: Int) {
        self.handle = handle
        self.limit = limit
    }

    /// The next line (1-based number, bytes without the newline or a trailing `\r`), or nil at the end.
    ///
    /// - Throws: ``CommandInputError`` for a line longer than `limit`.
    mutating func next() throws -> (Int, ArraySlice<UInt8>)? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                lineNumber += 1
                var line = buffer[..<newline]
                if line.last == 0x0D { line = line.dropLast() }
                let result = Array(line)
                buffer.removeSubrange(...newline)
                guard result.count <= limit else { throw CommandInputError("line \(lineNumber) is longer than \(limit) bytes") }
                return (lineNumber, result[...])
            }
            guard buffer.count <= limit else { throw CommandInputError("line \(lineNumber + 1) is longer than \(limit) bytes") }
            if finished {
                guard !buffer.isEmpty else { return nil }
                lineNumber += 1
                let result = buffer
                buffer = []
                return (lineNumber, result[...])
            }
            let chunk = try handle.read(upToCount: 64 * 1024) ?? Data()
            if chunk.isEmpty { finished = true } else { buffer += chunk }
        }
    }
}
