/// A value that can be bound as a query parameter through ``PostgresQuery`` interpolation.
public protocol PostgresEncodable: Sendable {
    /// The parameter type sent to the server; ``PostgresDataType/unspecified`` lets it infer.
    static var postgresDataType: PostgresDataType { get }

    /// The wire form of this value.
    var postgresBindValue: PostgresBindValue { get }
}

/// One parameter's wire form: NULL, text (format 0), or binary bytes (format 1).
public struct PostgresBindValue: Sendable, Hashable {
    enum Storage: Sendable, Hashable {
        case null
        case text(String)
        case binary([UInt8])
    }

    let storage: Storage

    /// SQL NULL.
    public static let null = PostgresBindValue(storage: .null)

    /// A value in PostgreSQL's text input syntax for the parameter's type.
    public static func text(_ text: String) -> PostgresBindValue { PostgresBindValue(storage: .text(text)) }

    /// A value in PostgreSQL's binary send format for the parameter's type.
    public static func binary(_ bytes: [UInt8]) -> PostgresBindValue { PostgresBindValue(storage: .binary(bytes)) }
}

/// A value that can be read from a result column.
public protocol PostgresDecodable {
    /// Decodes a non-NULL column value.
    ///
    /// - Parameter cell: The column's type and its text-format value.
    /// - Throws: ``PostgresDecodingFailure`` when the type does not fit or the text is malformed.
    init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure)

    /// Decodes a non-NULL column value from its text-format bytes where libpq holds them (valid
    /// only during the call). The default makes a ``PostgresCell`` of them; a type that parses
    /// bytes (`Date`) reads them in place, without a `String` in between.
    init(postgresBytes bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType) throws(PostgresDecodingFailure)

    /// Decodes a non-NULL column value from PostgreSQL's binary send format for `dataType`,
    /// where libpq holds it (valid only during the call): for a result read in binary (a
    /// `BINARY` cursor, ``PostgresRows/isBinary``). The default refuses; the types a backtest
    /// reads in bulk (text, uuid, timestamps, integers, booleans) read it.
    init(postgresBinary bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType) throws(PostgresDecodingFailure)

    /// The value for SQL NULL; non-optional types throw ``PostgresDecodingFailure/unexpectedNull``.
    static func postgresNull() throws(PostgresDecodingFailure) -> Self
}

extension PostgresDecodable {
    /// Non-optional types cannot hold NULL.
    public static func postgresNull() throws(PostgresDecodingFailure) -> Self { throw .unexpectedNull }

    /// Through ``init(postgresCell:)``, the bytes decoded as UTF-8 (the client encoding, fixed
    /// at connect; anything else is repaired rather than trapped on).
    @inlinable
    public init(
        postgresBytes bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        try self.init(postgresCell: PostgresCell(dataType: dataType, text: String(decoding: bytes, as: UTF8.self)))
    }

    /// No binary form is read for this type: refused, rather than misread as text.
    public init(
        postgresBinary bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        throw .malformed(reason: "read in binary format, which \(Self.self) does not decode")
    }
}

/// Reading PostgreSQL's binary send formats: big-endian integers of the column's width.
enum PostgresBinary {
    /// The big-endian integer in `bytes` (2, 4 or 8 of them, as `dataType` says).
    static func integer(
        _ bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) -> Int64 {
        let width: Int
        switch dataType {
        case .int2: width = 2
        case .int4, .oid: width = 4
        case .int8: width = 8
        default: throw .typeMismatch
        }
        guard bytes.count == width else { throw .malformed(reason: "\(bytes.count) bytes for a \(width)-byte integer") }
        var value: UInt64 = 0
        for byte in bytes { value = value << 8 | UInt64(byte) }
        // Sign-extend from the column's width (oid is unsigned).
        if dataType == .oid { return Int64(value) }
        let shift = UInt64(64 - 8 * width)
        return Int64(bitPattern: value << shift) >> Int64(shift)
    }
}

/// A non-NULL column value handed to ``PostgresDecodable/init(postgresCell:)``.
public struct PostgresCell: Sendable {
    /// The column's type as reported by the server.
    public let dataType: PostgresDataType
    /// The value in PostgreSQL's text output syntax (results are read as text, except those of
    /// ``PostgresConnection/queryBinary(_:file:line:)``, which never make a cell).
    public let text: String

    /// Creates a cell.
    public init(dataType: PostgresDataType, text: String) {
        self.dataType = dataType
        self.text = text
    }

    /// Throws ``PostgresDecodingFailure/typeMismatch`` unless the column's type is one of `accepted`.
    public func require(_ accepted: Set<PostgresDataType>) throws(PostgresDecodingFailure) {
        guard accepted.contains(dataType) else { throw .typeMismatch }
    }
}

/// Why a column could not be decoded. The row turns it into a ``PostgresError`` that names the
/// column and the types, never the value (which may be a PAN).
public enum PostgresDecodingFailure: Error, Sendable, Hashable {
    /// The column's PostgreSQL type cannot become the requested Swift type.
    case typeMismatch
    /// The column is NULL and the Swift type is not optional.
    case unexpectedNull
    /// The type fits but the text is not valid for it (out of range, bad syntax).
    case malformed(reason: String)
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public static var postgresDataType: PostgresDataType { Wrapped.postgresDataType }

    public var postgresBindValue: PostgresBindValue {
        switch self {
        case .none: .null
        case .some(let value): value.postgresBindValue
        }
    }
}

// Inlinable, so that a caller's decode of `String?` is specialized: unspecialized, each cell
// looked up `Optional<Wrapped>`'s metadata at run time (2 % of a backtest's CPU).
extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    @inlinable
    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        self = .some(try Wrapped(postgresCell: cell))
    }

    @inlinable
    public init(
        postgresBytes bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        self = .some(try Wrapped(postgresBytes: bytes, dataType: dataType))
    }

    @inlinable
    public init(
        postgresBinary bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        self = .some(try Wrapped(postgresBinary: bytes, dataType: dataType))
    }

    @inlinable
    public static func postgresNull() throws(PostgresDecodingFailure) -> Wrapped? { nil }
}
