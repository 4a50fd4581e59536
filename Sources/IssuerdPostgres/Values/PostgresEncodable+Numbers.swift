// Integers, floating point and booleans travel in PostgreSQL's text syntax: it is exact for
// every value of these types and saves an endianness dance for a handful of bytes.

/// PostgreSQL's integer types, which every Swift integer accepts when the value fits.
private let integerTypes: Set<PostgresDataType> = [.int2, .int4, .int8, .oid]
/// The types `Double` accepts; the column types of `Bool`. (Each a constant: a set literal at the
/// call builds a set for every cell decoded.)
private let floatingPointTypes: Set<PostgresDataType> = [.float4, .float8, .numeric, .int2, .int4, .int8]
private let boolTypes: Set<PostgresDataType> = [.bool]

extension FixedWidthInteger {
    fileprivate init(postgresInteger cell: PostgresCell) throws(PostgresDecodingFailure) {
        try cell.require(integerTypes)
        guard let value = Self(cell.text) else {
            throw .malformed(reason: "integer out of range for \(Self.self)")
        }
        self = value
    }
}

extension FixedWidthInteger {
    fileprivate init(
        postgresBinaryInteger bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        guard let value = Self(exactly: try PostgresBinary.integer(bytes, dataType: dataType)) else {
            throw .malformed(reason: "integer out of range for \(Self.self)")
        }
        self = value
    }
}

extension Int: PostgresEncodable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .int8 }
    public var postgresBindValue: PostgresBindValue { .text(String(self)) }
    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        try self.init(postgresInteger: cell)
    }
    public init(
        postgresBinary bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        try self.init(postgresBinaryInteger: bytes, dataType: dataType)
    }
}

extension Int64: PostgresEncodable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .int8 }
    public var postgresBindValue: PostgresBindValue { .text(String(self)) }
    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        try self.init(postgresInteger: cell)
    }
    public init(
        postgresBinary bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        try self.init(postgresBinaryInteger: bytes, dataType: dataType)
    }
}

extension Int32: PostgresEncodable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .int4 }
    public var postgresBindValue: PostgresBindValue { .text(String(self)) }
    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        try self.init(postgresInteger: cell)
    }
    public init(
        postgresBinary bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        try self.init(postgresBinaryInteger: bytes, dataType: dataType)
    }
}

extension Int16: PostgresEncodable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .int2 }
    public var postgresBindValue: PostgresBindValue { .text(String(self)) }
    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        try self.init(postgresInteger: cell)
    }
    public init(
        postgresBinary bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        try self.init(postgresBinaryInteger: bytes, dataType: dataType)
    }
}

extension Bool: PostgresEncodable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .bool }
    public var postgresBindValue: PostgresBindValue { .text(self ? "t" : "f") }

    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        try cell.require(boolTypes)
        switch cell.text {
        case "t": self = true
        case "f": self = false
        default: throw .malformed(reason: "boolean is neither t nor f")
        }
    }

    public init(
        postgresBinary bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        guard dataType == .bool else { throw .typeMismatch }
        guard bytes.count == 1, bytes[0] <= 1 else { throw .malformed(reason: "boolean is neither 0 nor 1") }
        self = bytes[0] == 1
    }
}

extension Double: PostgresEncodable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .float8 }

    /// Swift prints the shortest text that reads back to the same bits; only the special
    /// values need PostgreSQL's spelling (`Infinity`, `NaN`), which Swift does not produce.
    public var postgresBindValue: PostgresBindValue {
        if isNaN { return .text("NaN") }
        if isInfinite { return .text(self < 0 ? "-Infinity" : "Infinity") }
        return .text(String(self))
    }

    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        try cell.require(floatingPointTypes)
        // PostgreSQL 12+ prints float8 with the shortest exact digits, so this round-trips.
        guard let value = Double(cell.text) else { throw .malformed(reason: "not a floating-point number") }
        self = value
    }
}
