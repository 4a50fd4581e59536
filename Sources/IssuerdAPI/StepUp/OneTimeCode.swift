import IssuerdCrypto

/// Six-digit one-time codes drawn uniformly from a CSPRNG.
///
/// A plain `random % 1_000_000` over 32 bits favours the low codes slightly (2^32 is not a
/// multiple of 10^6); rejection sampling below the largest multiple removes that bias.
enum OneTimeCode {
    /// Digits in a code.
    static let digitCount = 6
    private static let modulus: UInt32 = 1_000_000
    /// The largest multiple of `modulus` that fits in 32 bits: draws at or above it are redrawn.
    private static let limit: UInt32 = UInt32.max - (UInt32.max % modulus) - 1

    /// A fresh code such as `"042917"`.
    ///
    /// - Throws: ``CryptoError`` when the DRBG fails.
    static func generate() throws -> String {
        while true {
            let bytes = try SecureRandom.bytes(count: 4)
            let value = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if value <= limit { return format(value % modulus) }
        }
    }

    /// Whether `text` has the shape of a code (six ASCII digits); anything else is wrong
    /// without reaching the digest.
    static func isWellFormed(_ text: String) -> Bool {
        text.utf8.count == digitCount && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    static func format(_ value: UInt32) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, digitCount - digits.count)) + digits
    }
}
