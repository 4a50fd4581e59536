/// A statement that names the value its rows decode to, as postgres-nio's prepared statements
/// name their row type: sent in a ``PostgresPipeline``, its result is read back through the
/// ``PostgresHandle`` that appending it returned, already decoded.
///
/// ```swift
/// var opening = PostgresPipeline()
/// let context = opening.append(PushContext.statement(...))   // a PostgresHandle<PushContext.Statement>
/// ... connection.pipelinedTransaction(opening: opening) { _, results in
///     guard let push = try results[context] else { ... }       // a PushContext?
/// ```
public protocol PostgresStatement {
    /// What the statement's rows decode to.
    associatedtype Result
    /// The statement as sent.
    var query: PostgresQuery { get }
    /// Decodes the statement's rows.
    func result(from rows: PostgresRows) throws -> Result
}

/// A plain query is a statement whose result is its rows.
extension PostgresQuery: PostgresStatement {
    public var query: PostgresQuery { self }
    public func result(from rows: PostgresRows) -> PostgresRows { rows }
}

/// Where one statement of a pipeline stands, and how its result decodes: the only way to read
/// that result from ``PostgresPipelineResults``.
public struct PostgresHandle<Statement: PostgresStatement> {
    let position: Int
    let statement: Statement
}

extension PostgresHandle: Sendable where Statement: Sendable {}

/// The statements of one pipeline, in the order they are sent. A statement whose result the
/// caller reads is appended with ``append(_:)``, which returns its handle; an array literal or
/// ``append(contentsOf:)`` adds statements whose results nobody reads (settings, locks, writes).
public struct PostgresPipeline: Sendable, ExpressibleByArrayLiteral {
    /// The statements, in order.
    public private(set) var queries: [PostgresQuery]

    public init(_ queries: [PostgresQuery] = []) { self.queries = queries }

    public init(arrayLiteral queries: PostgresQuery...) { self.queries = queries }

    /// Appends `statement` and returns the handle its result is read through.
    @discardableResult
    public mutating func append<Statement: PostgresStatement>(_ statement: Statement) -> PostgresHandle<Statement> {
        queries.append(statement.query)
        return PostgresHandle(position: queries.count - 1, statement: statement)
    }

    /// Appends statements whose results are not read.
    public mutating func append(contentsOf statements: [PostgresQuery]) { queries.append(contentsOf: statements) }
}

/// The results of a ``PostgresPipeline``'s statements, each read through its handle.
public struct PostgresPipelineResults: Sendable {
    private let results: [PostgresRows]

    init(_ results: [PostgresRows]) { self.results = results }

    /// The number of statements answered.
    public var count: Int { results.count }

    /// The result of the statement `handle` stands for, decoded by that statement.
    ///
    /// - Throws: What the statement's ``PostgresStatement/result(from:)`` throws.
    public subscript<Statement: PostgresStatement>(handle: PostgresHandle<Statement>) -> Statement.Result {
        get throws {
            precondition(results.indices.contains(handle.position), "a handle of another pipeline")
            return try handle.statement.result(from: results[handle.position])
        }
    }

    /// The rows of a plain query's handle (no decoding, so no `try`).
    public subscript(handle: PostgresHandle<PostgresQuery>) -> PostgresRows {
        precondition(results.indices.contains(handle.position), "a handle of another pipeline")
        return results[handle.position]
    }

    /// The same results without the first `count` (the explicit transaction's `BEGIN`).
    func dropping(first count: Int) -> PostgresPipelineResults { .init(Array(results.dropFirst(count))) }

    /// The last statement's command tag (the explicit transaction's `COMMIT`).
    var lastCommandTag: String? { results.last?.commandTag }
}
