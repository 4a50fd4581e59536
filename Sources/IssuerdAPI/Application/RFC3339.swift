import Foundation

/// Timestamps as callers send them (RFC 3339 / ISO 8601 with a zone, with or without
/// fractional seconds), parsed one way everywhere: the TSP's event times, admin change dates,
/// backtest windows, the analyst commands.
public enum RFC3339 {
    /// The date, or nil for anything else. Longer than 40 bytes is refused before parsing: no
    /// valid timestamp is that long, and the formatter need not see a huge string.
    public static func date(_ text: String) -> Date? {
        guard text.utf8.count <= 40 else { return nil }
        // ISO8601DateFormatter is not Sendable, so each call makes its own.
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }

    /// `2025-03-01T12:00:00Z` (UTC, whole seconds).
    public static func string(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }
}
