/// The velocity values stored attempts recorded at decision time, for a backtest's replay.
///
/// Every stored decision keeps the values its ruleset read (`provisioning_attempts.features`,
/// keyed by ``VelocityQuery/description``). A value recorded for a query is exactly what the live
/// system counted for that attempt, so the replay takes it as it is; a query an attempt has no
/// recorded value for (a window or metric its deciding ruleset did not use, a recorded null,
/// an attempt stored without features) is counted from history instead (docs/rules.md,
/// "Backtest input"). Rows are in the replay's attempt order.
public struct RecordedVelocity: Sendable {
    /// The queries kept, in column order.
    public let queries: [VelocityQuery]
    private let descriptions: [String]
    private let keys: StoredJSON.KeySet
    private var values: [Int] = []
    private var present: [Bool] = []
    /// The counts of the document being appended, reused from one row to the next.
    private var scratch: [Int?] = []

    /// An empty table for `queries`.
    public init(queries: [VelocityQuery]) {
        self.queries = queries
        descriptions = queries.map(\.description)
        keys = StoredJSON.KeySet(descriptions.map { Array($0.utf8) })
    }

    /// The number of rows.
    public var count: Int { queries.isEmpty ? 0 : values.count / queries.count }

    /// Appends one attempt's row: one entry per query, nil where nothing usable was recorded.
    ///
    /// - Precondition: `row.count == queries.count`.
    public mutating func append(_ row: [Int?]) {
        precondition(row.count == queries.count, "one value per query")
        for value in row { append(value) }
    }

    /// Makes room for `rows` more rows (a table filled row by row otherwise regrows, and each
    /// regrowth of a large one touches fresh pages).
    public mutating func reserveCapacity(rows: Int) {
        values.reserveCapacity(values.count + rows * queries.count)
        present.reserveCapacity(present.count + rows * queries.count)
    }

    /// Appends row `index` of `other`, a table of the same queries (no array per row in between).
    ///
    /// - Precondition: `other.queries == queries` (only their number is checked: this runs per row).
    public mutating func append(row index: Int, of other: RecordedVelocity) {
        precondition(other.queries.count == queries.count, "the same queries")
        let start = index * queries.count
        values.append(contentsOf: other.values[start..<(start + queries.count)])
        present.append(contentsOf: other.present[start..<(start + queries.count)])
    }

    /// Appends row `index` of `other`, a table of other queries: column `c` of the new row is
    /// `other`'s column `columns[c]`, or nil (not recorded) where that is nil.
    ///
    /// - Precondition: `columns.count == queries.count`, each index one of `other`'s columns.
    public mutating func append(row index: Int, of other: RecordedVelocity, columns: [Int?]) {
        precondition(columns.count == queries.count, "one column per query")
        for column in columns {
            append(column.flatMap { other.value(row: index, column: $0) })
        }
    }

    /// Appends one value (one column of the row being appended).
    private mutating func append(_ value: Int?) {
        values.append(value ?? 0)
        present.append(value != nil)
    }

    /// Appends one attempt's row from its stored `features` JSON text: `{"attempts(card, 24h)": 3, …}`
    /// or `[{"query"|"name": …, "value": …}, …]`, as `issuerd rules explain` reads it. A query
    /// counts as recorded when its value is a whole number; null (a recorded unknown), a
    /// fraction, anything else or no entry leave it to history.
    public mutating func append(storedFeatures text: String) {
        var text = text
        text.withUTF8 { append(storedFeatures: $0) }
    }

    /// The same from the text's UTF-8 bytes (a backtest's read
    /// parses them where libpq holds them).
    public mutating func append(storedFeatures bytes: UnsafeBufferPointer<UInt8>) {
        if StoredJSON.counts(of: bytes, keys: keys, into: &scratch) {
            for value in scratch { append(value) }
            return
        }
        var byName: [String: StoredJSON] = [:]
        switch StoredJSON.parse(bytes: bytes) {
        case .object(let members)?:
            byName = members
        case .array(let items)?:
            for item in items {
                guard case .object(let members) = item, case .string(let name)? = members["query"] ?? members["name"]
                else { continue }
                byName[name] = members["value"] ?? .null
            }
        default:
            break
        }
        append(descriptions.map { StoredJSON.count(byName[$0]) })
    }

    /// Row `index`: one entry per query, nil where nothing usable was recorded.
    public func row(_ index: Int) -> [Int?] {
        (0..<queries.count).map { value(row: index, column: $0) }
    }

    /// The value recorded for query `column` of attempt `row`, or nil.
    public func value(row: Int, column: Int) -> Int? {
        let index = row * queries.count + column
        guard index < present.count, present[index] else { return nil }
        return values[index]
    }

    /// One ruleset's queries resolved against the table once, so each attempt costs array reads.
    struct Lookup: Sendable {
        let queries: [VelocityQuery]
        let columns: [Int?]
        let recorded: RecordedVelocity?

        init(_ queries: [VelocityQuery], in recorded: RecordedVelocity?) {
            self.queries = queries
            self.recorded = recorded
            let columnOf = Dictionary(
                recorded?.queries.enumerated().map { ($1, $0) } ?? [], uniquingKeysWith: { first, _ in first })
            columns = queries.map { columnOf[$0] }
        }

        /// The values for attempt `index`: recorded where there is one, the rest counted from
        /// `history`, one query at a time.
        func values<History: BacktestVelocity>(
            attempt index: Int, _ attempt: AttemptLog.Attempt, history: History
        ) -> [Int?] {
            var values: [Int?] = []
            fill(&values, attempt: index, attempt, history: history)
            return values
        }

        /// ``values(attempt:_:history:)`` into `values`, reused from one attempt to the next (an
        /// array per attempt and ruleset was an allocation and a run-time metadata look-up).
        func fill<History: BacktestVelocity>(
            _ values: inout [Int?], attempt index: Int, _ attempt: AttemptLog.Attempt, history: History
        ) {
            withUnsafePointer(to: attempt) { fill(&values, attempt: index, at: $0, history: history) }
        }

        /// The same for the attempt at `attempt`, read in place: an attempt passed by value beside
        /// the `inout` values, from a buffer, was copied whole for the call.
        func fill<History: BacktestVelocity>(
            _ values: inout [Int?], attempt index: Int, at attempt: UnsafePointer<AttemptLog.Attempt>,
            history: History
        ) {
            if values.count != queries.count { values = [Int?](repeating: nil, count: queries.count) }
            for (position, column) in columns.enumerated() {
                if let column, let value = recorded?.value(row: index, column: column) {
                    values[position] = value
                } else {
                    // One query at a time: a batch per attempt cost three arrays for one value.
                    values[position] = history.value(
                        of: queries[position], subject: attempt.pointee.subject, at: attempt.pointee.time)
                }
            }
        }
    }
}
