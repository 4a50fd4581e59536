import Dispatch
import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk
import Synchronization

/// Reading through cursors, on several connections of one snapshot at once.
extension BacktestHistory {
    /// Runs `declare` (a `DECLARE cursor … FOR SELECT …`) and hands over its pages until `page`
    /// returns false; inside a transaction.
    ///
    /// The pages are fetched in binary format (``PostgresConnection/queryBinary(_:file:line:)``):
    /// the server sends uuids and timestamps as their 16 and 8 bytes instead of printing them
    /// (for a day of attempts and two days of history, about 30 ms of its CPU), and text and
    /// `json` columns as the same bytes as before.
    ///
    /// - Returns: False when `page` stopped it.
    package static func streamPages(
        _ declare: PostgresQuery, cursor: String, connection: PostgresConnection,
        page: (PostgresRows) throws -> Bool
    ) throws -> Bool {
        try connection.execute(declare)
        defer { _ = try? connection.execute("CLOSE \(unsafeSQL: cursor)") }
        while true {
            let rows = try connection.queryBinary(
                "FETCH FORWARD \(unsafeSQL: String(fetchSize)) FROM \(unsafeSQL: cursor)")
            guard try page(rows) else { return false }
            if rows.count < fetchSize { return true }
        }
    }

    /// Runs `declare` (a `DECLARE cursor … FOR SELECT …`) and hands over its rows until `row`
    /// returns false; inside a transaction.
    ///
    /// - Returns: False when `row` stopped it.
    @discardableResult
    package static func stream(
        _ declare: PostgresQuery, cursor: String, connection: PostgresConnection,
        row: (PostgresRow) throws -> Bool
    ) throws -> Bool {
        try streamPages(declare, cursor: cursor, connection: connection) { rows in
            for item in rows where try !row(item) { return false }
            return true
        }
    }

    /// `[from, to)` cut into `count` consecutive slices of equal length (the last ends at `to`).
    package static func slices(from: Date, to: Date, count: Int) -> [(Date, Date)] {
        guard count > 1, to > from else { return [(from, to)] }
        let step = to.timeIntervalSince(from) / Double(count)
        var bounds = (0..<count).map { from.addingTimeInterval(step * Double($0)) }
        bounds.append(to)
        return (0..<count).map { (bounds[$0], bounds[$0 + 1]) }
    }

    /// Runs `work(0..<count)` on `connections`, each connection on its own thread taking the
    /// next index until none is left, and returns the results in index order. The first error
    /// stops the others from taking more, and `work`'s third argument (true once another one
    /// failed) lets a long one stop early; the error is rethrown once all have stopped.
    package static func inParallel<T: Sendable>(
        _ count: Int, connections: [PostgresConnection], _ work: (Int, PostgresConnection, () -> Bool) throws -> T
    ) throws -> [T] {
        guard connections.count > 1, count > 1 else {
            return try (0..<count).map { try work($0, connections[0], { false }) }
        }
        let state = Lock(ParallelState<T>())
        let workers = min(connections.count, count)
        withoutActuallyEscaping(work) { work in
            // Each connection is used by exactly one worker, and `work` is called only until
            // concurrentPerform returns, while this thread waits in it.
            let lent = Lent(connections: connections, work: work)
            DispatchQueue.concurrentPerform(iterations: workers) { worker in
                while true {
                    let index: Int? = state.withLock { state in
                        guard state.error == nil, state.next < count else { return nil }
                        defer { state.next += 1 }
                        return state.next
                    }
                    guard let index else { return }
                    do {
                        let value = try lent.work(
                            index, lent.connections[worker], { state.withLock { $0.error != nil } })
                        state.withLock { $0.results[index] = value }
                    } catch {
                        state.withLock { if $0.error == nil { $0.error = error } }
                        return
                    }
                }
            }
        }
        return try state.withLock { state in
            if let error = state.error { throw error }
            return (0..<count).map { state.results[$0]! }
        }
    }

    /// What ``inParallel(_:connections:_:)``'s workers share: the next index, the results, the
    /// first error.
    private struct ParallelState<T> {
        var next = 0
        var results: [Int: T] = [:]
        var error: (any Error)?
    }

    /// @unchecked Sendable: carries the connections and the work into
    /// ``inParallel(_:connections:_:)``'s workers, which share them as described there.
    private struct Lent<T>: @unchecked Sendable {
        let connections: [PostgresConnection]
        let work: (Int, PostgresConnection, () -> Bool) throws -> T
    }
}
