/// A PostgreSQL type OID, as found in `pg_type.oid` and reported per result column.
public struct PostgresDataType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The OID.
    public let rawValue: UInt32

    /// Wraps an OID.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Lets the server infer the type from context (OID 0), as for an untyped literal.
    public static let unspecified = PostgresDataType(rawValue: 0)
    /// `bool`.
    public static let bool = PostgresDataType(rawValue: 16)
    /// `bytea`.
    public static let bytea = PostgresDataType(rawValue: 17)
    /// `name`.
    public static let name = PostgresDataType(rawValue: 19)
    /// `int8`.
    public static let int8 = PostgresDataType(rawValue: 20)
    /// `int2`.
    public static let int2 = PostgresDataType(rawValue: 21)
    /// `int4`.
    public static let int4 = PostgresDataType(rawValue: 23)
    /// `text`.
    public static let text = PostgresDataType(rawValue: 25)
    /// `oid`.
    public static let oid = PostgresDataType(rawValue: 26)
    /// `json`.
    public static let json = PostgresDataType(rawValue: 114)
    /// `float4`.
    public static let float4 = PostgresDataType(rawValue: 700)
    /// `float8`.
    public static let float8 = PostgresDataType(rawValue: 701)
    /// `unknown`: an untyped literal in a select list.
    public static let unknown = PostgresDataType(rawValue: 705)
    /// `name[]`.
    public static let nameArray = PostgresDataType(rawValue: 1003)
    /// `bpchar[]`.
    public static let bpcharArray = PostgresDataType(rawValue: 1014)
    /// `text[]`.
    public static let textArray = PostgresDataType(rawValue: 1009)
    /// `varchar[]`.
    public static let varcharArray = PostgresDataType(rawValue: 1015)
    /// `bpchar` (`char(n)`).
    public static let bpchar = PostgresDataType(rawValue: 1042)
    /// `varchar`.
    public static let varchar = PostgresDataType(rawValue: 1043)
    /// `timestamp` (without time zone).
    public static let timestamp = PostgresDataType(rawValue: 1114)
    /// `timestamptz`.
    public static let timestamptz = PostgresDataType(rawValue: 1184)
    /// `numeric`.
    public static let numeric = PostgresDataType(rawValue: 1700)
    /// `uuid`.
    public static let uuid = PostgresDataType(rawValue: 2950)
    /// `jsonb`.
    public static let jsonb = PostgresDataType(rawValue: 3802)

    public var description: String {
        switch self {
        case .bool: "bool"
        case .bytea: "bytea"
        case .name: "name"
        case .int8: "int8"
        case .int2: "int2"
        case .int4: "int4"
        case .text: "text"
        case .oid: "oid"
        case .json: "json"
        case .float4: "float4"
        case .float8: "float8"
        case .unknown: "unknown"
        case .textArray: "text[]"
        case .varcharArray: "varchar[]"
        case .bpchar: "bpchar"
        case .varchar: "varchar"
        case .timestamp: "timestamp"
        case .timestamptz: "timestamptz"
        case .numeric: "numeric"
        case .uuid: "uuid"
        case .jsonb: "jsonb"
        default: "oid \(rawValue)"
        }
    }
}
