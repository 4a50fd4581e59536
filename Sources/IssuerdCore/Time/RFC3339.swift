import Foundation

/// Timestamps as callers send them (RFC 3339 / ISO 8601 with a zone, with or without
/// fractional seconds), parsed one way everywhere: the TSP's event times, admin change dates,
/// backtest windows, the analyst commands.
public enum RFC3339 {
    /// The date, or nil for anything else. Longer than 40 bytes is refused before parsing: no
    /// valid timestamp is that long, and the formatter need not see a huge string.
    public static func date(_ text: String) -> Date? {
        guard text.utf8.count <= 40 else { return nil }
        if let date = wholeSecondsUTC(text) { return date }
        return (try? plain.parse(text)) ?? (try? fractional.parse(text))
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` naming a real instant from 1970 to 9999, by arithmetic (the
    /// common shape; the format style costs more than the rest of a bulk-imported customer's
    /// checks). Any other text, an impossible date included, is left to the format styles.
    package static func wholeSecondsUTC(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            guard bytes.count == 20, bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == 0x54, bytes[13] == 0x3A,
                bytes[16] == 0x3A,
                bytes[19] == 0x5A
            else { return nil }
            func number(_ from: Int, _ count: Int) -> Int? {
                var value = 0
                for index in from..<(from + count) {
                    let digit = Int(bytes[index]) - 0x30
                    guard (0...9).contains(digit) else { return nil }
                    value = value * 10 + digit
                }
                return value
            }
            guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
                let minute = number(14, 2), let second = number(17, 2), year >= 1970,
                CivilDate.isValid(year: year, month: month, day: day), hour < 24, minute < 60, second < 60
            else { return nil }
            let days = CivilDate.days(year: year, month: month, day: day)
            return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3_600 + minute * 60 + second))
        }
    }

    // Format styles are Sendable values parsed without ICU: an ISO8601DateFormatter made per
    // call cost ~200 µs (ICU locale and symbol set-up), most of a bulk-imported card's CPU when
    // its customer carried a change date. Fractional seconds keep up to microseconds.
    private static let plain = Date.ISO8601FormatStyle()
    private static let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// `2025-03-01T12:00:00Z` (UTC, whole seconds).
    public static func string(_ date: Date) -> String {
        plain.format(date)
    }
}
