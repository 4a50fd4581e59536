import Foundation

/// Timestamps as callers send them (RFC 3339 / ISO 8601 with a zone, with or without
/// fractional seconds), parsed one way everywhere: the TSP's event times, admin change dates,
/// backtest windows, the analyst commands.
public enum RFC3339 {
    /// The date, or nil for anything else. Longer than 40 bytes is refused before parsing: no
    /// valid timestamp is that long, and the formatter need not see a huge string.
    public static func date(_ text: String) -> Date? {
        guard text.utf8.count <= 40 else { return nil }
        return (try? plain.parse(text)) ?? (try? fractional.parse(text))
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
