/// One result row. Columns are decoded on request, by name or by position.
public struct PostgresRow: Sendable {
    let result: PostgresResult
    let row: Int

    /// Column names in result order.
    public var columns: [String] { result.columnNames }

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
        guard let index = result.columnIndex[column] else {
            throw PostgresError(
                code: .decoding,
                message: "no column named \"\(column)\" (columns: \(result.columnNames.joined(separator: ", ")))",
                file: file, line: line)
        }
        return try decode(index, as: type, file: file, line: line)
    }

    /// Decodes the column at `index` (0-based).
    ///
    /// - Throws: ``PostgresError`` with code ``PostgresError/Code/decoding`` naming the column.
    public func decode<T: PostgresDecodable>(
        _ index: Int, as type: T.Type = T.self, file: String = #fileID, line: Int = #line
    ) throws -> T {
        guard result.columnNames.indices.contains(index) else {
            throw PostgresError(
                code: .decoding, message: "no column at index \(index) (\(result.columnNames.count) columns)",
                file: file, line: line)
        }
        let name = result.columnNames[index]
        let dataType = result.columnTypes[index]
        do throws(PostgresDecodingFailure) {
            guard let text = result.text(row: row, column: index) else { return try T.postgresNull() }
            return try T(postgresCell: PostgresCell(dataType: dataType, text: text))
        } catch {
            // Names the column and both types, never the value: it may be a PAN or a secret.
            let reason: String
            switch error {
            case .unexpectedNull: reason = "is NULL; decode it as \(T.self)? to accept NULL"
            case .typeMismatch: reason = "of type \(dataType) cannot be decoded as \(T.self)"
            case .malformed(let why): reason = "of type \(dataType) is not a valid \(T.self): \(why)"
            }
            throw PostgresError(code: .decoding, message: "column \"\(name)\" \(reason)", file: file, line: line)
        }
    }

    /// True when the column at `index` is SQL NULL (or does not exist).
    public func isNull(_ index: Int) -> Bool {
        guard result.columnNames.indices.contains(index) else { return true }
        return result.text(row: row, column: index) == nil
    }
}
