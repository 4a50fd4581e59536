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

    /// A statement whose text was built before, with the bindings of a build that wrote only
    /// bindings (``StringInterpolation/init(bindingsOnly:)``): for a statement built for every
    /// request whose text changes only with its shape. `sql` must be the text the same builder
    /// wrote for the same shape.
    package init(reusing sql: String, bindings: StringInterpolation) {
        precondition(!bindings.writesText, "the bindings must come from a bindings-only build")
        self.sql = sql
        self.bindings = bindings.bindings
    }

    /// The SQL with every bound value shown as `****`.
    public var description: String {
        bindings.isEmpty ? sql : sql + " [" + bindings.map { _ in "****" }.joined(separator: ", ") + "]"
    }

    /// Collects literal SQL and parameters while a query literal is being built.
    public struct StringInterpolation: StringInterpolationProtocol {
        var sql: String
        var bindings: [PostgresBinding] = []
        /// False for a build that collects only the bindings (see ``PostgresQuery/init(reusing:bindings:)``).
        package private(set) var writesText = true

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = ""
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            bindings.reserveCapacity(interpolationCount)
        }

        /// A build that writes no text, only the bindings, in the order a full build binds them.
        package init(bindingsOnly interpolationCount: Int) {
            sql = ""
            writesText = false
            bindings.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            if writesText { sql += literal }
        }

        /// Trusted SQL text made only when it is written: a bindings-only build skips making it.
        package mutating func appendText(_ text: @autoclosure () -> String) {
            if writesText { sql += text() }
        }

        /// Binds `value` as the next `$n` parameter.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            bindings.append(PostgresBinding(value))
            if writesText { appendPlaceholder() }
        }

        /// Binds an optional as the next `$n` parameter; `nil` is SQL NULL. (An explicit
        /// overload: through the generic one, Swift warns about interpolating an optional.)
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            bindings.append(PostgresBinding(value))
            if writesText { appendPlaceholder() }
        }

        /// Inserts trusted SQL text verbatim. Never pass input from outside the program.
        public mutating func appendInterpolation(unsafeSQL text: String) {
            if writesText { sql += text }
        }

        private mutating func appendPlaceholder() {
            let number = bindings.count
            sql.append(number < Self.placeholders.count ? Self.placeholders[number] : "$\(number)")
        }

        /// `$1`…`$63` made once: every statement built for a request writes its placeholders, and
        /// formatting each number was a string allocation apiece.
        private static let placeholders = (0..<64).map { "$\($0)" }
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
