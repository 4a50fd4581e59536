import Foundation

/// The column type bytes decode from (a constant: a set literal at the call builds one per cell).
private let byteaTypes: Set<PostgresDataType> = [.bytea]

// bytea goes out in binary format with an explicit length, so zero bytes survive and no
// escaping is involved. It comes back as text in the `hex` output format, which the
// connection selects at start-up (`bytea_output = hex`).

extension UInt8: PostgresArrayElement {
    public static var postgresArrayDataType: PostgresDataType { .bytea }

    public static func postgresBindValue(of array: [UInt8]) -> PostgresBindValue { .binary(array) }

    public static func postgresArray(from cell: PostgresCell) throws(PostgresDecodingFailure) -> [UInt8] {
        try cell.require(byteaTypes)
        return try ByteaHex.decode(cell.text)
    }
}

extension Data: PostgresEncodable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .bytea }
    public var postgresBindValue: PostgresBindValue { .binary([UInt8](self)) }

    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        try cell.require(byteaTypes)
        self = Data(try ByteaHex.decode(cell.text))
    }
}

/// The `\x`-prefixed hex text form of `bytea` (PostgreSQL manual, 8.4.1).
enum ByteaHex {
    static func decode(_ text: String) throws(PostgresDecodingFailure) -> [UInt8] {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            throw .malformed(reason: "bytea is not in hex output format")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else {
                throw .malformed(reason: "bytea has a non-hex digit")
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
