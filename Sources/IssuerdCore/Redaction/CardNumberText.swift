/// Card numbers inside free text (a search, a CSV cell, a request path, an id), found by one rule:
/// a run of decimal digits (of any script: full-width, Arabic-Indic…) that separators (spaces,
/// dashes, dots, slashes…) may interrupt but a letter or another numeral ends.
///
/// A run of 12 or more digits may be a card number: the console's attempt search refuses it, the
/// changed-attempts CSV leaves it out and the access log masks it. An id is refused only when a
/// run is a card number outright (12 to 19 digits passing the Luhn check), so numeric ids stay
/// possible.
public enum CardNumberText {
    /// What a masked run is replaced by.
    public static let mask = "****"

    /// Whether `text` holds a run of 12 or more digits; a UUID in its canonical form (whose hex
    /// groups can hold long runs of digits) is never one.
    public static func contains(_ text: String) -> Bool {
        if text.utf8.count == 36, isCanonicalUUID(text) { return false }
        // ASCII text (every attempt id, time, channel and rule id) by its bytes: there a decimal
        // digit is 0-9 and only letters and digits are alphabetic or numeric, as below.
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            var run = 0
            for byte in text.utf8 {
                if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                    run += 1
                    if run >= 12 { return true }
                } else if (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") {
                    run = 0
                }
            }
            return false
        }
        return runs(in: text).contains { $0.digits.count >= 12 }
    }

    /// `text` with every run of 12 or more digits, from its first digit to its last, replaced by
    /// ``mask``; unchanged (and not copied) when it holds none.
    public static func masked(_ text: String) -> String {
        guard contains(text) else { return text }
        var result = ""
        var position = text.unicodeScalars.startIndex
        for run in runs(in: text) where run.digits.count >= 12 {
            result.unicodeScalars.append(contentsOf: text.unicodeScalars[position..<run.range.lowerBound])
            result += mask
            position = run.range.upperBound
        }
        result.unicodeScalars.append(contentsOf: text.unicodeScalars[position...])
        return result
    }

    /// Whether a run in `text` is a card number: 12 to 19 digits passing the Luhn check.
    public static func holdsCardNumber(_ text: String) -> Bool {
        func isCardNumber(_ digits: [UInt8]) -> Bool {
            (12...19).contains(digits.count) && PrimaryAccountNumber.luhnValid(digits)
        }
        // ASCII (every identifier; the bulk import checks two a line) by its bytes, as in contains(_:).
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            var digits: [UInt8] = []
            for byte in text.utf8 {
                if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                    digits.append(byte)
                } else if (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") {
                    if isCardNumber(digits) { return true }
                    digits.removeAll(keepingCapacity: true)
                }
            }
            return isCardNumber(digits)
        }
        return runs(in: text).contains { isCardNumber($0.digits) }
    }

    /// The runs of `text`: where each lies (first digit to last) and its digits as ASCII.
    static func runs(in text: String) -> [(range: Range<String.UnicodeScalarView.Index>, digits: [UInt8])] {
        var found: [(range: Range<String.UnicodeScalarView.Index>, digits: [UInt8])] = []
        var start: String.UnicodeScalarView.Index?
        var end = text.unicodeScalars.startIndex
        var digits: [UInt8] = []
        func close() {
            if let start, !digits.isEmpty { found.append((start..<end, digits)) }
            start = nil
            digits = []
        }
        var index = text.unicodeScalars.startIndex
        while index < text.unicodeScalars.endIndex {
            let scalar = text.unicodeScalars[index]
            let next = text.unicodeScalars.index(after: index)
            if scalar.properties.numericType == .decimal, let value = scalar.properties.numericValue {
                if start == nil { start = index }
                digits.append(UInt8(ascii: "0") + UInt8(value))
                end = next
            } else if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
                close()
            }
            index = next
        }
        close()
        return found
    }

    /// 8-4-4-4-12 hexadecimal digits with dashes.
    private static func isCanonicalUUID(_ text: String) -> Bool {
        for (offset, byte) in text.utf8.enumerated() {
            if [8, 13, 18, 23].contains(offset) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                let lower = byte | 0x20
                guard
                    (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                        || (lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "f"))
                else { return false }
            }
        }
        return text.utf8.count == 36
    }
}
