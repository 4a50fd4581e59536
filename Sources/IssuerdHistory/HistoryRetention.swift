import Foundation
import IssuerdRisk

/// `ISSUERD_HISTORY_RETENTION`: how many whole months of attempts are kept (docs/configuration.md).
///
/// With `N` months, `issuerd history archive` archives and drops every month that ended on or
/// before the first day of the month `N` months before the current one, so at least `N` whole
/// months (and the current one) stay; a velocity window may reach back at most `N` × 28 days.
package struct HistoryRetention: Sendable, Equatable {
    package var months: Int

    package init(months: Int) { self.months = months }

    /// `25months`, `1month`, `2years` or `1year` (no spaces; 1 to 1200 months).
    package init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let digits = trimmed.prefix { $0.isASCII && $0.isNumber }
        guard let count = Int(digits), count > 0 else { return nil }
        let unit = trimmed.dropFirst(digits.count)
        switch unit {
        case "month", "months": months = count
        case "year", "years": months = count * 12
        default: return nil
        }
        guard (1...1200).contains(months) else { return nil }
    }

    /// The history a velocity window may rely on: `months` × 28 days.
    package var guaranteedSeconds: Int { months * 28 * 86_400 }

    /// The first instant kept: the start (UTC) of the month `months` before the month of `now`.
    package func cutoff(now: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let month = calendar.date(from: calendar.dateComponents([.year, .month], from: now)) ?? now
        return calendar.date(byAdding: .month, value: -months, to: month) ?? month
    }

    /// One line per velocity query of `ruleset` whose window reaches past what is kept.
    package func refusals(_ ruleset: Ruleset) -> [String] {
        ruleset.velocityQueries.filter { $0.windowSeconds > guaranteedSeconds }.map {
            "velocity \($0) looks back \($0.windowSeconds / 86_400) days, past ISSUERD_HISTORY_RETENTION "
                + "(\(months) month\(months == 1 ? "" : "s") keeps \(guaranteedSeconds / 86_400) days for certain)"
        }
    }
}
