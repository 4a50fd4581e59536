import IssuerdCrypto

/// Hex as MDES sends it: either case, even mixed within one text ("case-insensitive", says Mastercard).
enum HexText {
    /// The value of one ASCII hex digit, or nil.
    static func value(of byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// The bytes of `text`, when its length is in `lengths` and even and every character is a
    /// hex digit.
    ///
    /// - Throws: ``FieldLevelEncryptionError`` (`malformedField(field)`).
    static func decode(_ text: String, field: String, lengths: ClosedRange<Int>) throws -> [UInt8] {
        let utf8 = text.utf8
        guard lengths.contains(utf8.count), utf8.count % 2 == 0 else {
            throw FieldLevelEncryptionError(.malformedField(field))
        }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var high: UInt8?
        for byte in utf8 {
            guard let digit = value(of: byte) else { throw FieldLevelEncryptionError(.malformedField(field)) }
            if let first = high {
                out.append(first << 4 | digit)
                high = nil
            } else {
                high = digit
            }
        }
        return out
    }

    /// Lowercase hex of `bytes`.
    static func encode(_ bytes: [UInt8]) -> String { BinaryEncoding.hexString(bytes) }
}
