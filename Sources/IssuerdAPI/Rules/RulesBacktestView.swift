import Foundation
import IssuerdRisk

/// The body of `POST /v1/admin/rules/backtest`: current versus candidate over the same
/// attempts, with velocity as of each attempt.
struct RulesBacktestView: Encodable, Sendable {
    struct Window: Encodable, Sendable {
        var since: Date
        var until: Date
        /// Where history for velocity starts: `since` minus the longest window the rules use.
        var historyFrom: Date
    }

    struct Flows: Encodable, Sendable {
        var green: Int
        var yellow: Int
        var orange: Int

        init(_ mix: [Flow: Int]) {
            green = mix[.green] ?? 0
            yellow = mix[.yellow] ?? 0
            orange = mix[.orange] ?? 0
        }
    }

    struct RuleCount: Encodable, Sendable {
        var id: String
        var mode: String
        var hits: Int
    }

    struct Summary: Encodable, Sendable {
        var version: String
        var flows: Flows
        /// Hit count by rule id (live and shadow, invariants that hit).
        var ruleHits: [String: Int]
        /// The same, in ruleset order, with each rule's mode.
        var rules: [RuleCount]
        /// Decisions with at least one rule left undecided by an unknown value.
        var unresolved: Int

        init(version: String, mix: [Flow: Int], counts: [Backtest.RuleCount], unresolved: Int) {
            self.version = version
            flows = Flows(mix)
            ruleHits = Dictionary(counts.map { ($0.ruleID, $0.hits) }, uniquingKeysWith: { first, _ in first })
            rules = counts.map { RuleCount(id: $0.ruleID, mode: $0.mode.rawValue, hits: $0.hits) }
            self.unresolved = unresolved
        }
    }

    struct HitView: Encodable, Sendable {
        var rule: String
        var outcome: String
        var mode: String
        var reason: String
        /// `name = value` for each value the rule read.
        var values: [String]

        init(_ hit: RuleHit) {
            rule = hit.ruleID
            outcome = hit.outcome.description
            mode = hit.mode.rawValue
            reason = hit.reason
            values = hit.values.map(\.description)
        }
    }

    struct Change: Encodable, Sendable {
        var attemptId: String
        var before: String
        var after: String
        var beforeHits: [HitView]
        var afterHits: [HitView]
    }

    var attemptsEvaluated: Int
    var window: Window
    var current: Summary
    var candidate: Summary
    /// Attempts whose flow changed.
    var changed: Int
    /// `transitions[before][after]` for the attempts that changed.
    var transitions: [String: [String: Int]]
    /// A sample of the attempts whose flow changed.
    var changedAttempts: [Change]

    init(_ report: Backtest.Report, current: Ruleset, candidate: Ruleset, window: Window) {
        attemptsEvaluated = report.attempts
        self.window = window
        self.current = Summary(version: current.version, mix: report.currentMix, counts: report.currentHits, unresolved: report.currentUnresolved)
        self.candidate = Summary(version: candidate.version, mix: report.candidateMix, counts: report.candidateHits,
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
            Change(attemptId: change.attemptID, before: change.before.flow.description, after: change.after.flow.description,
                   beforeHits: change.before.hits.map(HitView.init), afterHits: change.after.hits.map(HitView.init))
        }
    }
}
