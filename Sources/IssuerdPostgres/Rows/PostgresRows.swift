/// The rows of one statement's result, decoded lazily column by column.
public struct PostgresRows: RandomAccessCollection, Sendable {
    let result: PostgresResult

    init(result: PostgresResult) { self.result = result }

    /// Rows inserted, updated, deleted, selected, moved or copied, from the command tag.
    public var affectedRows: Int { result.affectedRows }
    /// The command tag, e.g. `INSERT 0 1` or `SELECT 3`.
    public var commandTag: String { result.commandTag }
    /// Column names in result order.
    public var columns: [String] { result.columnNames }

    public var startIndex: Int { 0 }
    public var endIndex: Int { result.rowCount }

    public subscript(position: Int) -> PostgresRow {
        precondition(indices.contains(position), "row index out of range")
        return PostgresRow(result: result, row: position)
    }
}
