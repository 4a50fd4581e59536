import Foundation
import IssuerdCore

/// The column types a `UUID` and a `[String]` decode from (constants: a set literal at the call
/// builds a set for every cell decoded).
private let uuidTypes: Set<PostgresDataType> = [.uuid, .text, .varchar, .bpchar, .unknown]
private let textArrayTypes: Set<PostgresDataType> = [.textArray, .varcharArray, .bpcharArray, .nameArray]

extension String: PostgresEncodable, PostgresDecodable {
    /// Unspecified rather than `text`, so that the server infers the column's own type: a
    /// `text` parameter compared with an enum or `citext` column finds no operator.
    public static var postgresDataType: PostgresDataType { .unspecified }
    public var postgresBindValue: PostgresBindValue { .text(self) }

    /// Every type has a text form, so any column decodes as `String` except `bytea`, whose
    /// text form (hex) is almost never what the caller meant.
    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        guard cell.dataType != .bytea else { throw .typeMismatch }
        self = cell.text
    }

    /// In binary, the text types and `json` are their UTF-8 text (`jsonb` after a version
    /// byte), and a `uuid` its 16 bytes, written here as PostgreSQL prints it. Other types'
    /// binary forms are not text: refused.
    public init(
        postgresBinary bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        switch dataType {
        case .text, .varchar, .bpchar, .name, .json, .unknown:
            self = String(decoding: bytes, as: UTF8.self)
        case .jsonb:
            guard bytes.first == 1 else { throw .malformed(reason: "unknown jsonb version") }
            self = String(decoding: UnsafeBufferPointer(rebasing: bytes.dropFirst()), as: UTF8.self)
        case .uuid:
            guard bytes.count == 16 else { throw .malformed(reason: "a uuid is 16 bytes") }
            self = String(unsafeUninitializedCapacity: 36) { text in
                let digits = Array("0123456789abcdef".utf8)
                var at = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    text[at] = digits[Int(byte >> 4)]
                    text[at + 1] = digits[Int(byte & 0x0F)]
                    at += 2
                }
                return at
            }
        default:
            throw .typeMismatch
        }
    }
}

extension UUID: PostgresEncodable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .uuid }
    /// Its 16 bytes in binary (uuid's send format): the text form went through Foundation's
    /// `uuidString` (`snprintf`) and `lowercased()`, twice a request.
    public var postgresBindValue: PostgresBindValue { .binary(bytes) }

    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        try cell.require(uuidTypes)
        guard let uuid = UUID(uuidString: cell.text) else { throw .malformed(reason: "not a UUID") }
        self = uuid
    }

    public init(
        postgresBinary bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        guard dataType == .uuid else { throw .typeMismatch }
        guard bytes.count == 16 else { throw .malformed(reason: "a uuid is 16 bytes") }
        self = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}

/// An element type whose Swift arrays map to one PostgreSQL type: `[UInt8]` is `bytea`,
/// `[String]` is `text[]`. (Swift allows one conditional conformance of `Array` per protocol,
/// so the element type chooses the encoding.)
public protocol PostgresArrayElement: Sendable {
    /// The PostgreSQL type of an array of this element.
    static var postgresArrayDataType: PostgresDataType { get }
    /// Encodes an array of this element.
    static func postgresBindValue(of array: [Self]) -> PostgresBindValue
    /// Decodes an array of this element.
    static func postgresArray(from cell: PostgresCell) throws(PostgresDecodingFailure) -> [Self]
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    public static var postgresDataType: PostgresDataType { Element.postgresArrayDataType }
    public var postgresBindValue: PostgresBindValue { Element.postgresBindValue(of: self) }
}

extension Array: PostgresDecodable where Element: PostgresArrayElement {
    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        self = try Element.postgresArray(from: cell)
    }
}

extension String: PostgresArrayElement {
    public static var postgresArrayDataType: PostgresDataType { .textArray }

    public static func postgresBindValue(of array: [String]) -> PostgresBindValue {
        .text(PostgresArrayLiteral.format(array))
    }

    public static func postgresArray(from cell: PostgresCell) throws(PostgresDecodingFailure) -> [String] {
        try cell.require(textArrayTypes)
        let elements = try PostgresArrayLiteral.parse(cell.text)
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for element in elements {
            guard let element else {
                throw .malformed(reason: "array has a NULL element; decode as [String?] is unsupported")
            }
            strings.append(element)
        }
        return strings
    }
}
