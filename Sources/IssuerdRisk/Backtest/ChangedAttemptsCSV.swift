import Foundation
import IssuerdCore

/// The attempts whose flow a candidate changes, as CSV (RFC 4180, `\r\n` line ends), for
/// `issuerd rules backtest --changed-csv` and the console's Backtest page:
///
/// ```
/// attempt_id,time,channel,card_last_four,before,after,rules
/// 6f1c…,2025-03-01T10:10:00.500Z,tsp,4242,green,orange,candidate: retry; current: -
/// ```
///
/// Safe to open in a spreadsheet: a cell starting with `=`, `+`, `-`, `@`, a tab or a carriage
/// return is prefixed with `'` (OWASP's CSV injection advice), and a cell holding what could be
/// a card number (12 or more digits, separators between them or not; the console's rule) is
/// replaced, so no full card number ever reaches the file, whatever a rule id or an attempt id
/// holds. The card is named by its last four digits only, and only when they are four digits.
public enum ChangedAttemptsCSV {
    /// The header line's columns.
    public static let columns = ["attempt_id", "time", "channel", "card_last_four", "before", "after", "rules"]

    /// What replaces a cell that holds a card number.
    public static let removed = "[card number removed]"

    /// The header line, with its line end.
    public static var header: String { line(columns) }

    /// One changed attempt's line, with its line end.
    ///
    /// - Parameters:
    ///   - channel: The attempt's channel (its stored column when known), else `change.channel`.
    ///   - lastFour: The card's last four digits; anything but four ASCII digits is left out.
    public static func line(_ change: Backtest.ChangedAttempt, channel: String? = nil, lastFour: String?) -> String {
        let four = lastFour.flatMap { $0.utf8.count == 4 && $0.utf8.allSatisfy { (48...57).contains($0) } ? $0 : nil }
        var rules: [String] = []
        rules.append(
            "candidate: " + (change.candidateOnly.isEmpty ? "-" : change.candidateOnly.joined(separator: ", ")))
        rules.append("current: " + (change.currentOnly.isEmpty ? "-" : change.currentOnly.joined(separator: ", ")))
        return line([
            change.attemptID, timestamp(change.time), channel ?? change.channel ?? "", four ?? "",
            change.before.description, change.after.description, rules.joined(separator: "; "),
        ])
    }

    /// Cells joined as one line: each made safe (``cell(_:)``).
    public static func line(_ cells: [String]) -> String {
        cells.map(cell).joined(separator: ",") + "\r\n"
    }

    /// One cell as written: a card number removed, a formula's first character defused, quoted
    /// when it holds a comma, a quote or a line break.
    public static func cell(_ text: String) -> String {
        var value = containsCardNumber(text) ? removed : text
        if let first = value.utf8.first,
            first == UInt8(ascii: "=") || first == UInt8(ascii: "+")
                || first == UInt8(ascii: "-") || first == UInt8(ascii: "@") || first == 0x09 || first == 0x0D
        {
            value = "'" + value
        }
        // Bytes, not Characters: these four are ASCII, never part of another scalar's UTF-8.
        if value.utf8.contains(where: {
            $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D
        }) {
            value = "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return value
    }

    /// Whether `text` holds a run of 12 or more decimal digits (of any script) that separators
    /// may interrupt but letters do not continue; a UUID is never one (the console's search rule).
    public static func containsCardNumber(_ text: String) -> Bool { CardNumberText.contains(text) }

    /// `YYYY-MM-DDTHH:MM:SS.sssZ` in UTC.
    public static func timestamp(_ date: Date) -> String {
        let milliseconds = Int((date.timeIntervalSince1970 * 1_000).rounded(.down))
        let seconds = milliseconds >= 0 ? milliseconds / 1_000 : (milliseconds - 999) / 1_000
        let fraction = milliseconds - seconds * 1_000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilDate.date(days: days)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        func three(_ value: Int) -> String { value < 10 ? "00\(value)" : value < 100 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(secondOfDay / 3_600)):\(two(secondOfDay % 3_600 / 60)):"
            + "\(two(secondOfDay % 60)).\(three(fraction))Z"
    }
}
