import Foundation
import IssuerdRisk

/// ``RulePerformance`` as `issuerd rules performance` prints it: one line per rule, then totals.
package enum RulePerformanceText {
    /// The table and the totals line, each line ending in a newline.
    package static func render(_ performance: RulePerformance) -> String {
        let header = [
            "rule", "mode", "hits", "decided", "fraud", "legit", "unlabelled", "precision", "recall", "missed",
            "lost", "stepups(started/completed/abandoned)",
        ]
        var rows = [header]
        for rule in performance.rules {
            rows.append([
                rule.ruleId, rule.mode, String(rule.hits), String(rule.decided), String(rule.fraud),
                String(rule.legitimate), String(rule.unlabelled), share(rule.precision), share(rule.recall),
                String(rule.missedFraud), won(rule.fraudAmount),
                "\(rule.stepUpsStarted)/\(rule.stepUpsCompleted)/\(rule.stepUpsAbandoned)",
            ])
        }
        var widths = Array(repeating: 0, count: header.count)
        for row in rows { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        var text = ""
        for row in rows {
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            text += cells.joined(separator: "  ") + "\n"
        }
        let totals = performance.totals
        text +=
            "totals: attempts=\(totals.attempts) fraud=\(totals.fraud) legitimate=\(totals.legitimate) "
            + "unlabelled=\(totals.unlabelled) fraudPassedGreen=\(totals.fraudPassedGreen) "
            + "(\(won(totals.fraudPassedGreenAmount))) labelMaturity=\(share(totals.labelMaturity)) "
            + "(attempts older than \(totals.labelMaturityDays)d)\n"
        return text
    }

    /// A ratio with three decimals, or `-` when there is none.
    static func share(_ value: Double?) -> String {
        guard let value else { return "-" }
        return String(format: "%.3f", value)
    }

    /// An amount in won: `₩3.2M`, `₩350K`, `₩900`.
    package static func won(_ amount: Int64) -> String { Backtest.won(amount) }
}
