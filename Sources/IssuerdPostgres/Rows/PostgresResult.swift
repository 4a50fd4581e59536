import CPostgres

/// Owns one `PGresult` and the column lookup built from it.
///
/// @unchecked Sendable: immutable after init, and libpq only reads a PGresult once
/// `PQexecParams` has returned it, so concurrent reads from several threads are safe.
@usableFromInline
final class PostgresResult: @unchecked Sendable {
    private let handle: OpaquePointer
    let rowCount: Int
    let commandTag: String
    let affectedRows: Int
    /// True when the values are in binary format (a `BINARY` cursor's rows), each column in its
    /// type's send format; false for text, the format of every other result.
    @usableFromInline let isBinary: Bool

    /// The column names, types and name lookup, shared by the results of one prepared statement.
    @usableFromInline let columns: PostgresColumns
    @usableFromInline var columnNames: [String] { columns.names }
    @usableFromInline var columnTypes: [PostgresDataType] { columns.types }
    var columnIndex: [String: Int] { columns.index }

    /// Takes ownership of a successful result.
    ///
    /// - Parameter known: The columns of an earlier result of the same prepared statement; used
    ///   when this result has the same column types (building names and their lookup for
    ///   every result was a measurable part of a provisioning request).
    init(owning handle: OpaquePointer, columns known: PostgresColumns? = nil) {
        self.handle = handle
        rowCount = Int(PQntuples(handle))
        columns = known.flatMap { $0.describes(handle) ? $0 : nil } ?? PostgresColumns(of: handle)
        commandTag = PQcmdStatus(handle).map { String(cString: $0) } ?? ""
        affectedRows = PQcmdTuples(handle).flatMap { Int(String(cString: $0)) } ?? 0
        isBinary = PQbinaryTuples(handle) == 1
    }

    deinit { PQclear(handle) }

    /// Calls `body` with the bytes at a row and column where libpq holds them, in the result's
    /// format (``isBinary``; nil for SQL NULL), valid only during the call.
    @usableFromInline
    func withBytes<R, E: Error>(
        row: Int, column: Int, _ body: (UnsafeBufferPointer<UInt8>?) throws(E) -> R
    ) throws(E) -> R {
        let row32 = Int32(row)
        let column32 = Int32(column)
        guard PQgetisnull(handle, row32, column32) == 0, let value = PQgetvalue(handle, row32, column32) else {
            return try body(nil)
        }
        let length = Int(PQgetlength(handle, row32, column32))
        return try value.withMemoryRebound(to: UInt8.self, capacity: length) { start throws(E) in
            try body(UnsafeBufferPointer(start: start, count: length))
        }
    }
}

/// A result's column names, types and name lookup.
@usableFromInline
final class PostgresColumns: Sendable {
    @usableFromInline let names: [String]
    @usableFromInline let types: [PostgresDataType]
    let index: [String: Int]

    init(of handle: OpaquePointer) {
        let count = Int(PQnfields(handle))
        var names: [String] = []
        var types: [PostgresDataType] = []
        var index: [String: Int] = [:]
        for column in 0..<count {
            let name = PQfname(handle, Int32(column)).map { String(cString: $0) } ?? ""
            names.append(name)
            types.append(PostgresDataType(rawValue: PQftype(handle, Int32(column))))
            // The first column of a name wins, as in SQL's own resolution of `SELECT a, a`.
            if index[name] == nil { index[name] = column }
        }
        self.names = names
        self.types = types
        // PQfnumber is avoided on purpose: it folds unquoted names to lower case.
        self.index = index
    }

    /// True when `handle` has these columns' count and types (a prepared statement's result
    /// shape cannot change without the server refusing to run it: 0A000).
    func describes(_ handle: OpaquePointer) -> Bool {
        guard Int(PQnfields(handle)) == types.count else { return false }
        for (column, type) in types.enumerated() where PQftype(handle, Int32(column)) != type.rawValue { return false }
        return true
    }
}
