import CPostgres

/// Owns one `PGresult` and the column lookup built from it.
///
/// @unchecked Sendable: immutable after init, and libpq only reads a PGresult once
/// `PQexecParams` has returned it, so concurrent reads from several threads are safe.
@usableFromInline
final class PostgresResult: @unchecked Sendable {
    private let handle: OpaquePointer
    let rowCount: Int
    @usableFromInline let columnNames: [String]
    @usableFromInline let columnTypes: [PostgresDataType]
    let columnIndex: [String: Int]
    let commandTag: String
    let affectedRows: Int

    /// Takes ownership of a successful result.
    init(owning handle: OpaquePointer) {
        self.handle = handle
        rowCount = Int(PQntuples(handle))
        let columnCount = Int(PQnfields(handle))
        var names: [String] = []
        var types: [PostgresDataType] = []
        var index: [String: Int] = [:]
        for column in 0..<columnCount {
            let name = PQfname(handle, Int32(column)).map { String(cString: $0) } ?? ""
            names.append(name)
            types.append(PostgresDataType(rawValue: PQftype(handle, Int32(column))))
            // The first column of a name wins, as in SQL's own resolution of `SELECT a, a`.
            if index[name] == nil { index[name] = column }
        }
        columnNames = names
        columnTypes = types
        // PQfnumber is avoided on purpose: it folds unquoted names to lower case.
        columnIndex = index
        commandTag = PQcmdStatus(handle).map { String(cString: $0) } ?? ""
        affectedRows = PQcmdTuples(handle).flatMap { Int(String(cString: $0)) } ?? 0
    }

    deinit { PQclear(handle) }

    /// Calls `body` with the text-format bytes at a row and column where libpq holds them (nil
    /// for SQL NULL), valid only during the call.
    @usableFromInline
    func withBytes<R, E: Error>(row: Int, column: Int, _ body: (UnsafeBufferPointer<UInt8>?) throws(E) -> R) throws(E) -> R {
        let row32 = Int32(row), column32 = Int32(column)
        guard PQgetisnull(handle, row32, column32) == 0, let value = PQgetvalue(handle, row32, column32) else { return try body(nil) }
        let length = Int(PQgetlength(handle, row32, column32))
        return try value.withMemoryRebound(to: UInt8.self, capacity: length) { start throws(E) in
            try body(UnsafeBufferPointer(start: start, count: length))
        }
    }
}
