import IssuerdCore
import IssuerdCrypto

/// Hex as MDES sends it: either case, even mixed within one text ("case-insensitive", says Mastercard).
enum HexText {
    /// The bytes of `text`, when its length is in `lengths` and every character is a hex digit
    /// (either case, ``Hex/bytes(_:)``).
    ///
    /// - Throws: ``FieldLevelEncryptionError`` (`malformedField(field)`).
    static func decode(_ text: String, field: String, lengths: ClosedRange<Int>) throws -> [UInt8] {
        guard lengths.contains(text.utf8.count), let bytes = Hex.bytes(text.utf8) else {
            throw FieldLevelEncryptionError(.malformedField(field))
        }
        return bytes
    }

    /// Lowercase hex of `bytes`.
    static func encode(_ bytes: [UInt8]) -> String { BinaryEncoding.hexString(bytes) }
}
