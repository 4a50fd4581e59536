import Foundation

/// The column types JSON decodes from (a constant: a set literal at the call builds one per cell).
private let jsonTypes: Set<PostgresDataType> = [.jsonb, .json]

/// A `jsonb` value: raw JSON text, or any `Encodable` encoded with `JSONEncoder`.
///
/// The server validates the text when it is bound (SQLSTATE 22P02 for invalid JSON), so no
/// second parser runs here. `jsonb` normalises what it stores (key order, whitespace), so
/// compare decoded values rather than text.
public struct PostgresJSON: PostgresJSONDocument, Hashable {
    /// The JSON document as text.
    public var rawJSON: String

    /// Wraps JSON text as is.
    public init(rawJSON: String) { self.rawJSON = rawJSON }

    /// Encodes a value as JSON.
    ///
    /// - Parameters:
    ///   - value: What to store.
    ///   - encoder: Defaults to sorted keys without slash escaping, for stable text.
    /// - Throws: Whatever `JSONEncoder` throws (e.g. a non-finite `Double`).
    public init(encoding value: some Encodable, encoder: JSONEncoder = PostgresJSON.defaultEncoder()) throws {
        rawJSON = String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Decodes the document.
    ///
    /// - Parameters:
    ///   - type: The `Decodable` type to produce.
    ///   - decoder: A configured decoder, if the default does not fit.
    /// - Throws: Whatever `JSONDecoder` throws.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(type, from: Data(rawJSON.utf8))
    }

    /// An encoder with sorted keys and unescaped slashes.
    public static func defaultEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static var postgresDataType: PostgresDataType { .jsonb }
}

/// A `json` value: PostgreSQL checks the text is JSON and stores it as sent, and reads it back
/// byte for byte.
///
/// For documents written once and read whole, such as an attempt's inputs: `jsonb` parses the
/// text into its binary form on the way in and renders it again on the way out, which was most
/// of PostgreSQL's time reading a day of attempts for a backtest (sql/0018). `->` and `->>` work
/// on `json` too, parsing the text as they go.
public struct PostgresTextJSON: PostgresJSONDocument, Hashable {
    /// The JSON document as text.
    public var rawJSON: String

    /// Wraps JSON text as is.
    public init(rawJSON: String) { self.rawJSON = rawJSON }

    public static var postgresDataType: PostgresDataType { .json }
}

/// What ``PostgresJSON`` (`jsonb`) and ``PostgresTextJSON`` (`json`) share: JSON text bound as
/// text, read from a column of either type.
public protocol PostgresJSONDocument: PostgresEncodable, PostgresDecodable, CustomStringConvertible {
    /// The JSON document as text.
    var rawJSON: String { get }
    /// Wraps JSON text as is.
    init(rawJSON: String)
}

extension PostgresJSONDocument {
    /// The JSON may hold anything, so it prints masked like every other bound value.
    public var description: String { "\(Self.self)(****)" }

    public var postgresBindValue: PostgresBindValue { .text(rawJSON) }

    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        try cell.require(jsonTypes)
        self.init(rawJSON: cell.text)
    }
}
