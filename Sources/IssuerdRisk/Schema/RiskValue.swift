/// A value read by a rule, as recorded in a decision, an example case or a backtest record.
public enum RiskValue: Sendable, Hashable, CustomStringConvertible {
    /// The value was missing at decision time.
    case unknown
    /// A bool.
    case bool(Bool)
    /// A number.
    case number(Double)
    /// A string (enumerations by name).
    case string(String)
    /// Seconds.
    case duration(Double)
    /// A set of strings, in the order received.
    case strings([String])

    public var description: String {
        switch self {
        case .unknown: "unknown"
        case .bool(let value): value ? "true" : "false"
        case .number(let value): Self.format(value)
        case .string(let value): "\"\(value)\""
        case .duration(let seconds): Self.readableDuration(seconds)
        case .strings(let values): "[" + values.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
        }
    }

    /// True for ``unknown``.
    public var isUnknown: Bool { self == .unknown }

    /// A number without a trailing `.0` when it is whole.
    static func format(_ value: Double) -> String {
        if value.rounded() == value, abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    /// A duration as analysts tend to write it: whole days from a week up (`14d`), else the
    /// largest of hours, minutes or seconds that divides it (`24h`, `72h`, `90m`).
    static func formatDuration(_ seconds: Double) -> String {
        if seconds >= 7 * 86_400, (seconds / 86_400).rounded() == seconds / 86_400 {
            return format(seconds / 86_400) + "d"
        }
        for (unit, size) in [("h", 3_600.0), ("m", 60.0)] where seconds != 0 {
            let count = seconds / size
            if count.rounded() == count { return format(count) + unit }
        }
        return format(seconds) + "s"
    }

    /// A measured duration as a person reads it: as a rule would write it when that is exact
    /// (`24h`, `14d`, `90m`), else its two largest units, rounded down (`3d 4h`, `5m 12s`), and
    /// `0s` under a second (a card added a moment ago), never a fraction of a second.
    static func readableDuration(_ seconds: Double) -> String {
        let exact = formatDuration(seconds)
        guard !seconds.isFinite || exact.contains(".") || (exact.hasSuffix("s") && abs(seconds) >= 60) else {
            return exact
        }
        guard seconds.isFinite else { return exact }
        var left = Int64(abs(seconds).rounded(.down))
        var parts: [String] = []
        for (unit, size) in [("d", Int64(86_400)), ("h", 3_600), ("m", 60), ("s", 1)] {
            let count = left / size
            left -= count * size
            if count > 0 || !parts.isEmpty { parts.append("\(count)\(unit)") }
            if parts.count == 2 { break }
        }
        let text = parts.filter { !$0.hasPrefix("0") }.joined(separator: " ")
        return (seconds < 0 ? "-" : "") + (text.isEmpty ? "0s" : text)
    }
}
