/// SQL text plus its bound parameters, built by string interpolation.
///
/// Every interpolated value becomes a `$n` placeholder and travels separately from the SQL,
/// so no value can change the statement:
///
/// ```swift
/// let rows = try connection.query("SELECT id FROM cards WHERE pan_hash = \(hash) AND tries < \(limit)")
/// ```
///
/// Raw SQL (an identifier chosen by code, an `ORDER BY`) goes in only through the loudly
/// named `\(unsafeSQL:)` and ``init(unsafeSQL:)``.
public struct PostgresQuery: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The statement with `$1`, `$2`… placeholders.
    public private(set) var sql: String
    /// The parameters, in placeholder order.
    public private(set) var bindings: [PostgresBinding]

    /// A query from trusted SQL text with no parameters.
    ///
    /// - Parameter sql: Text that must not contain untrusted input.
    public init(unsafeSQL sql: String) {
        self.sql = sql
        self.bindings = []
    }

    public init(stringLiteral value: String) {
        self.init(unsafeSQL: value)
    }

    public init(stringInterpolation: StringInterpolation) {
        self.sql = stringInterpolation.sql
        self.bindings = stringInterpolation.bindings
    }

    /// The SQL with every bound value shown as `****`.
    public var description: String {
        bindings.isEmpty ? sql : sql + " [" + bindings.map { _ in "****" }.joined(separator: ", ") + "]"
    }

    /// Collects literal SQL and parameters while a query literal is being built.
    public struct StringInterpolation: StringInterpolationProtocol {
        var sql: String
        var bindings: [PostgresBinding] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = ""
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            bindings.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        /// Binds `value` as the next `$n` parameter.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            bindings.append(PostgresBinding(value))
            sql += "$\(bindings.count)"
        }

        /// Binds an optional as the next `$n` parameter; `nil` is SQL NULL. (An explicit
        /// overload: through the generic one, Swift warns about interpolating an optional.)
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            bindings.append(PostgresBinding(value))
            sql += "$\(bindings.count)"
        }

        /// Inserts trusted SQL text verbatim. Never pass input from outside the program.
        public mutating func appendInterpolation(unsafeSQL text: String) {
            sql += text
        }
    }
}

/// One bound parameter: its declared type and wire form.
public struct PostgresBinding: Sendable, Hashable {
    /// The type announced to the server.
    public let dataType: PostgresDataType
    /// NULL, text or binary bytes.
    public let value: PostgresBindValue

    /// Encodes a value.
    public init<Value: PostgresEncodable>(_ value: Value) {
        self.dataType = Value.postgresDataType
        self.value = value.postgresBindValue
    }
}
