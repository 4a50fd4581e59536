import Foundation
import IssuerdRisk

/// The body of `POST /v1/admin/rules/backtest`: current versus candidate over the same
/// attempts, with velocity as of each attempt.
package struct RulesBacktestView: Encodable, Sendable {
    package struct Window: Encodable, Sendable {
        package var since: Date
        package var until: Date
        /// Where history for velocity starts: `since` minus the longest window the rules use.
        package var historyFrom: Date

        /// Creates the value from every stored property.
        package init(since: Date, until: Date, historyFrom: Date) {
            self.since = since
            self.until = until
            self.historyFrom = historyFrom
        }
    }

    package struct Flows: Encodable, Sendable {
        package var green: Int
        package var yellow: Int
        package var orange: Int

        package init(_ mix: [Flow: Int]) {
            green = mix[.green] ?? 0
            yellow = mix[.yellow] ?? 0
            orange = mix[.orange] ?? 0
        }
    }

    package struct RuleCount: Encodable, Sendable {
        package var id: String
        package var mode: String
        package var hits: Int
    }

    package struct Summary: Encodable, Sendable {
        package var version: String
        package var flows: Flows
        /// Hit count by rule id (live and shadow, invariants that hit).
        package var ruleHits: [String: Int]
        /// The same, in ruleset order, with each rule's mode.
        package var rules: [RuleCount]
        /// Decisions with at least one rule left undecided by an unknown value.
        package var unresolved: Int

        package init(version: String, mix: [Flow: Int], counts: [Backtest.RuleCount], unresolved: Int) {
            self.version = version
            flows = Flows(mix)
            ruleHits = Dictionary(counts.map { ($0.ruleID, $0.hits) }, uniquingKeysWith: { first, _ in first })
            rules = counts.map { RuleCount(id: $0.ruleID, mode: $0.mode.rawValue, hits: $0.hits) }
            self.unresolved = unresolved
        }
    }

    package struct HitView: Encodable, Sendable {
        package var rule: String
        package var outcome: String
        package var mode: String
        package var reason: String
        /// `name = value` for each value the rule read.
        package var values: [String]

        package init(_ hit: RuleHit) {
            rule = hit.ruleID
            outcome = hit.outcome.description
            mode = hit.mode.rawValue
            reason = hit.reason
            values = hit.values.map(\.description)
        }
    }

    package struct Change: Encodable, Sendable {
        package var attemptId: String
        package var before: String
        package var after: String
        package var beforeHits: [HitView]
        package var afterHits: [HitView]
    }

    package var attemptsEvaluated: Int
    package var window: Window
    package var current: Summary
    package var candidate: Summary
    /// Attempts whose flow changed.
    package var changed: Int
    /// `transitions[before][after]` for the attempts that changed.
    package var transitions: [String: [String: Int]]
    /// A sample of the attempts whose flow changed.
    package var changedAttempts: [Change]

    package init(_ report: Backtest.Report, current: Ruleset, candidate: Ruleset, window: Window) {
        attemptsEvaluated = report.attempts
        self.window = window
        self.current = Summary(
            version: current.version, mix: report.currentMix, counts: report.currentHits,
            unresolved: report.currentUnresolved)
        self.candidate = Summary(
            version: candidate.version, mix: report.candidateMix, counts: report.candidateHits,
            unresolved: report.candidateUnresolved)
        changed = report.changed
        var transitions: [String: [String: Int]] = [:]
        for (before, targets) in report.transitions {
            for (after, count) in targets where before != after && count > 0 {
                transitions[before.description, default: [:]][after.description] = count
            }
        }
        self.transitions = transitions
        changedAttempts = report.sample.map { change in
            Change(
                attemptId: change.attemptID, before: change.before.flow.description,
                after: change.after.flow.description,
                beforeHits: change.before.hits.map(HitView.init), afterHits: change.after.hits.map(HitView.init))
        }
    }
}
