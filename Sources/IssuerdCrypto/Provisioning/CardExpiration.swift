/// A card's expiry month, written `MM/YY` in Apple's payload and `MMYY` in Mastercard's TAV.
public struct CardExpiration: Sendable, Hashable, CustomStringConvertible, Codable {
    /// 1 to 12.
    public let month: Int
    /// Two-digit year, 0 to 99.
    public let year: Int

    /// Creates an expiry from numbers.
    ///
    /// - Returns: `nil` for a month outside 1...12 or a year outside 0...99.
    public init?(month: Int, year: Int) {
        guard (1...12).contains(month), (0...99).contains(year) else { return nil }
        self.month = month
        self.year = year
    }

    /// Parses exactly `MM/YY` (two digits, slash, two digits).
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 5, bytes[2] == UInt8(ascii: "/"),
            let month = Self.twoDigits(bytes[0], bytes[1]), let year = Self.twoDigits(bytes[3], bytes[4])
        else { return nil }
        self.init(month: month, year: year)
    }

    /// `MM/YY`, the form inside `encryptedPassData`.
    public var slashed: String { pad(month) + "/" + pad(year) }
    /// `MMYY`, the form Mastercard signs in a TAV.
    public var compact: String { pad(month) + pad(year) }
    public var description: String { slashed }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = CardExpiration(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected MM/YY"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(slashed)
    }

    private func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    private static func twoDigits(_ a: UInt8, _ b: UInt8) -> Int? {
        guard (0x30...0x39).contains(a), (0x30...0x39).contains(b) else { return nil }
        return Int(a - 0x30) * 10 + Int(b - 0x30)
    }
}
