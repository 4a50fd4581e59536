import CPostgres
import Foundation

/// Sends the data of a running `COPY … FROM STDIN` (libpq's copy API, PostgreSQL manual 34.10).
///
/// Only ``PostgresConnection/copyIn(unsafeSQL:file:line:_:)`` makes one, and only for the
/// duration of its body; the writer must not escape it.
public struct PostgresCopyWriter {
    let connection: PostgresConnection

    /// Sends bytes in the COPY's format (text format: tab-separated, `\N` for NULL, one row per
    /// `\n`; see ``PostgresCopyText``). Rows may be split across calls.
    ///
    /// - Throws: ``PostgresError/Code/unavailable`` when the connection is lost.
    public func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
            var offset = 0
            // PQputCopyData takes an int length: send in bounded pieces.
            while offset < buffer.count {
                let count = min(buffer.count - offset, 1 << 20)
                let status = base.advanced(by: offset).withMemoryRebound(to: CChar.self, capacity: count) {
                    PQputCopyData(connection.handle, $0, Int32(count))
                }
                // Blocking connection: 1 is success, -1 a failure (0 happens only in nonblocking mode).
                guard status == 1 else {
                    throw PostgresError(
                        code: connection.isConnected ? .other : .unavailable,
                        message:
                            "COPY data could not be sent: \(PostgresConnection.errorMessage(of: connection.handle))")
                }
                offset += count
            }
        }
    }
}

extension PostgresConnection {
    /// Runs `COPY … FROM STDIN`, letting `body` stream the data, and returns the rows copied.
    ///
    /// If `body` throws, the COPY is ended with a failure (the server discards what it had, and
    /// the surrounding transaction is aborted) and the error is rethrown. The COPY runs with
    /// libpq's blocking I/O and without ``statementTimeout``: bulk import is a command of its
    /// own (`issuerd cards import`), never a request's work.
    /// - Parameters:
    ///   - sql: The COPY statement. It takes no parameters: never build it from input.
    ///   - body: Writes the data through the writer it is given.
    /// - Returns: The number of rows the server copied.
    /// - Throws: ``PostgresError`` for a refused statement, a row the server rejected or a lost
    ///   connection; whatever `body` threw.
    @discardableResult
    public func copyIn(
        unsafeSQL sql: String, file: String = #fileID, line: Int = #line, _ body: (PostgresCopyWriter) throws -> Void
    ) throws -> Int {
        guard !Self.containsNUL(sql) else {
            throw PostgresError(
                code: .invalidParameter, message: "SQL text contains a NUL byte", file: file, line: line)
        }
        try refuseIfAbandoned(file: file, line: line)
        PQsetnonblocking(handle, 0)
        defer { PQsetnonblocking(handle, 1) }
        guard let started = PQexec(handle, sql) else {
            throw PostgresError(
                code: isConnected ? .other : .unavailable, message: Self.errorMessage(of: handle), file: file,
                line: line)
        }
        guard PQresultStatus(started) == PGRES_COPY_IN else {
            // Not a COPY FROM STDIN (or refused): report it the usual way.
            _ = try check(started, file: file, line: line)
            throw PostgresError(code: .other, message: "statement is not a COPY FROM STDIN", file: file, line: line)
        }
        PQclear(started)
        do {
            try body(PostgresCopyWriter(connection: self))
        } catch {
            // Tell the server the data is incomplete; it answers with an error result, which is
            // drained so the connection is usable for the ROLLBACK.
            _ = PQputCopyEnd(handle, "the client abandoned the COPY")
            drainResults()
            throw error
        }
        guard PQputCopyEnd(handle, nil) == 1 else {
            let message = Self.errorMessage(of: handle)
            drainResults()
            throw PostgresError(
                code: isConnected ? .other : .unavailable, message: "COPY could not be ended: \(message)", file: file,
                line: line)
        }
        var copied = 0
        var failure: Error?
        while let result = PQgetResult(handle) {
            if failure != nil {
                PQclear(result)
                continue
            }
            do {
                copied += try check(result, file: file, line: line).affectedRows
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        if !isConnected {
            throw PostgresError(code: .unavailable, message: Self.errorMessage(of: handle), file: file, line: line)
        }
        return copied
    }

    /// Consumes the results of an abandoned COPY until libpq has none left.
    private func drainResults() {
        while let result = PQgetResult(handle) { PQclear(result) }
    }
}

/// Writes values in COPY's text format (PostgreSQL manual, COPY, "Text Format").
public struct PostgresCopyText: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8] = []
    private var atRowStart = true

    /// An empty buffer with room for about `capacity` bytes.
    public init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    private mutating func separator() {
        if !atRowStart { bytes.append(0x09) }
        atRowStart = false
    }

    /// Appends a text column, escaping backslash, tab, newline and carriage return; nil is NULL.
    public mutating func text(_ value: String?) {
        separator()
        guard var value else {
            bytes += [0x5C, 0x4E]  // \N
            return
        }
        value.withUTF8 { utf8 in
            for byte in utf8 {
                switch byte {
                case 0x5C: bytes += [0x5C, 0x5C]
                case 0x09: bytes += [0x5C, 0x74]
                case 0x0A: bytes += [0x5C, 0x6E]
                case 0x0D: bytes += [0x5C, 0x72]
                default: bytes.append(byte)
                }
            }
        }
    }

    /// Appends an integer column.
    public mutating func integer(_ value: Int) {
        separator()
        bytes += Array(String(value).utf8)
    }

    /// Appends a `timestamptz` column (UTC with microseconds); nil is NULL.
    public mutating func timestamp(_ value: Date?) {
        guard let value else { return text(nil) }
        text(PostgresTimestamp.format(value))
    }

    /// A `timestamptz` as ``timestamp(_:)`` writes it, to format once and append with
    /// ``text(_:)`` to many rows.
    public static func timestampText(_ value: Date) -> String { PostgresTimestamp.format(value) }

    /// Appends a boolean column (`t`/`f`).
    public mutating func boolean(_ value: Bool) {
        separator()
        bytes.append(value ? 0x74 : 0x66)
    }

    /// Appends a `bytea` column in hex (`\\x…`: the backslash itself is escaped for COPY).
    public mutating func bytea(_ value: [UInt8]) {
        separator()
        bytes += [0x5C, 0x5C, 0x78]
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        for byte in value {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        }
    }

    /// Ends the current row.
    public mutating func endRow() {
        bytes.append(0x0A)
        atRowStart = true
    }

    /// Empties the buffer, keeping its storage.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        atRowStart = true
    }
}
