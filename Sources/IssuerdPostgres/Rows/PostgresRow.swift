/// One result row. Columns are decoded on request, by name or by position.
public struct PostgresRow: Sendable {
    @usableFromInline let result: PostgresResult
    @usableFromInline let row: Int

    /// Column names in result order.
    public var columns: [String] { result.columnNames }

    /// True when the row's values are in binary format (a `BINARY` cursor's rows).
    public var isBinary: Bool { result.isBinary }

    /// Decodes the column called `column`.
    ///
    /// - Parameters:
    ///   - column: The exact column name (case-sensitive, as PostgreSQL reports it).
    ///   - type: The Swift type; use an `Optional` for nullable columns.
    /// - Returns: The decoded value.
    /// - Throws: ``PostgresError`` with code ``PostgresError/Code/decoding`` naming the column
    ///   when it does not exist, is NULL for a non-optional type, or does not fit the type.
    public func decode<T: PostgresDecodable>(
        _ column: String, as type: T.Type = T.self, file: String = #fileID, line: Int = #line
    ) throws -> T {
        try decode(index(of: column, file: file, line: line), as: type, file: file, line: line)
    }

    /// The position of the column called `column`: the one look-up of a column by name.
    ///
    /// - Throws: ``PostgresError`` with code ``PostgresError/Code/decoding`` when there is none.
    public func index(of column: String, file: String = #fileID, line: Int = #line) throws -> Int {
        guard let index = result.columnIndex[column] else {
            throw PostgresError(
                code: .decoding,
                message: "no column named \"\(column)\" (columns: \(result.columnNames.joined(separator: ", ")))",
                file: file, line: line)
        }
        return index
    }

    /// True when the column called `column` is SQL NULL.
    ///
    /// - Throws: ``PostgresError`` with code ``PostgresError/Code/decoding`` when there is no
    ///   such column (a misspelt name is an error, not a NULL).
    public func isNull(_ column: String, file: String = #fileID, line: Int = #line) throws -> Bool {
        isNull(try index(of: column, file: file, line: line))
    }

    /// Decodes the column at `index` (0-based).
    ///
    /// - Throws: ``PostgresError`` with code ``PostgresError/Code/decoding`` naming the column.
    // Inlinable, so that it is specialized for each decoded type where it is called (a backtest
    // decodes seven columns of 33,000 rows; unspecialized, each went through run-time metadata).
    @inlinable
    public func decode<T: PostgresDecodable>(
        _ index: Int, as type: T.Type = T.self, file: String = #fileID, line: Int = #line
    ) throws -> T {
        guard result.columnNames.indices.contains(index) else {
            throw Self.noColumn(index, of: result.columnNames.count, file: file, line: line)
        }
        do throws(PostgresDecodingFailure) {
            return try result.withBytes(row: row, column: index) { bytes throws(PostgresDecodingFailure) in
                guard let bytes else { return try T.postgresNull() }
                if result.isBinary { return try T(postgresBinary: bytes, dataType: result.columnTypes[index]) }
                return try T(postgresBytes: bytes, dataType: result.columnTypes[index])
            }
        } catch {
            throw Self.failure(
                error, column: result.columnNames[index], dataType: result.columnTypes[index], as: T.self, file: file,
                line: line)
        }
    }

    /// Calls `body` with the bytes of the column at `index` where libpq holds them (nil for SQL
    /// NULL), valid only during the call: for parsing a large value in place (a backtest's JSON
    /// documents) instead of through a `String`. They are in the result's format: text, or in a
    /// binary result (``isBinary``) the type's send format (for `text` and `json`, the same bytes).
    ///
    /// - Throws: ``PostgresError`` with code ``PostgresError/Code/decoding`` when there is no
    ///   such column, or what `body` throws.
    public func withBytes<R>(
        _ index: Int, file: String = #fileID, line: Int = #line, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R
    ) throws -> R {
        guard result.columnNames.indices.contains(index) else {
            throw Self.noColumn(index, of: result.columnNames.count, file: file, line: line)
        }
        return try result.withBytes(row: row, column: index, body)
    }

    @usableFromInline
    static func noColumn(_ index: Int, of count: Int, file: String, line: Int) -> PostgresError {
        PostgresError(
            code: .decoding, message: "no column at index \(index) (\(count) columns)", file: file, line: line)
    }

    /// Names the column and both types, never the value: it may be a PAN or a secret.
    @usableFromInline
    static func failure<T>(
        _ error: PostgresDecodingFailure, column name: String, dataType: PostgresDataType, as _: T.Type,
        file: String, line: Int
    ) -> PostgresError {
        let reason: String
        switch error {
        case .unexpectedNull: reason = "is NULL; decode it as \(T.self)? to accept NULL"
        case .typeMismatch: reason = "of type \(dataType) cannot be decoded as \(T.self)"
        case .malformed(let why): reason = "of type \(dataType) is not a valid \(T.self): \(why)"
        }
        return PostgresError(code: .decoding, message: "column \"\(name)\" \(reason)", file: file, line: line)
    }

    /// True when the column at `index` is SQL NULL (or does not exist).
    public func isNull(_ index: Int) -> Bool {
        guard result.columnNames.indices.contains(index) else { return true }
        return result.withBytes(row: row, column: index) { $0 == nil }
    }
}
