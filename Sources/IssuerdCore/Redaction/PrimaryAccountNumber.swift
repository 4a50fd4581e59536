/// A card number (PAN): 12 to 19 digits passing the Luhn check.
///
/// Every textual form (`description`, interpolation, `dump`, logs) is masked to at most the
/// first six and last four digits, as PCI DSS allows. The digits themselves are available only
/// through ``unsafeDigits``, used where the PAN must be encrypted, fingerprinted or put into
/// Apple's pass payload.
public struct PrimaryAccountNumber: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable, LogValueConvertible
{
    /// The digits, unmasked.
    public let unsafeDigits: String

    /// Validates and wraps a PAN.
    ///
    /// - Parameter digits: 12 to 19 ASCII digits; spaces and dashes are not accepted.
    /// - Returns: `nil` when the input is not digits of a valid length or fails the Luhn check.
    public init?(_ digits: String) {
        let bytes = Array(digits.utf8)
        guard (12...19).contains(bytes.count), bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        guard Self.luhnValid(bytes) else { return nil }
        self.unsafeDigits = digits
    }

    /// The last four digits, shown to users and stored in clear.
    public var lastFour: String { String(unsafeDigits.suffix(4)) }

    /// The issuer identification prefix (first six digits).
    public var bin: String { String(unsafeDigits.prefix(6)) }

    /// The PAN with everything but the first six and last four digits replaced by `*`.
    public var masked: String {
        let hidden = unsafeDigits.count - 10
        return bin + String(repeating: "*", count: max(hidden, 0)) + lastFour
    }

    public var description: String { masked }
    public var debugDescription: String { "PrimaryAccountNumber(\(masked))" }
    public var customMirror: Mirror { Mirror(self, children: ["masked": masked]) }
    public var logValue: LogValue { .string(masked) }

    /// The Luhn (mod 10) check digit rule, ISO/IEC 7812-1 annex B.
    static func luhnValid(_ digits: [UInt8]) -> Bool {
        var sum = 0
        for (index, byte) in digits.reversed().enumerated() {
            var digit = Int(byte - 0x30)
            if index % 2 == 1 {
                digit *= 2
                if digit > 9 { digit -= 9 }
            }
            sum += digit
        }
        return sum % 10 == 0
    }
}
