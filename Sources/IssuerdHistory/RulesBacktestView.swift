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
    /// Serving against candidate over the attempts with an outcome; null when none has one.
    package var performance: PerformanceView?

    /// The figures of rule performance for both rulesets over the backtest's labelled attempts.
    package struct PerformanceView: Encodable, Sendable {
        package struct Side: Encodable, Sendable {
            package var fraud: Int
            package var legitimate: Int
            package var fraudPassedGreen: Int
            package var fraudPassedGreenAmount: Int64
            package var legitimateSteppedUp: Int
            package var legitimateDeclined: Int
            package var rules: [Rule]
        }

        package struct Rule: Encodable, Sendable {
            package var ruleId: String
            package var mode: String
            package var fraud: Int
            package var legitimate: Int
            package var fraudAmount: Int64
            package var precision: Double?
            package var recall: Double?
            package var missedFraud: Int

            package func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(ruleId, forKey: .ruleId)
                try container.encode(mode, forKey: .mode)
                try container.encode(fraud, forKey: .fraud)
                try container.encode(legitimate, forKey: .legitimate)
                try container.encode(fraudAmount, forKey: .fraudAmount)
                try container.encode(precision, forKey: .precision)
                try container.encode(recall, forKey: .recall)
                try container.encode(missedFraud, forKey: .missedFraud)
            }

            private enum CodingKeys: String, CodingKey {
                case ruleId, mode, fraud, legitimate, fraudAmount, precision, recall, missedFraud
            }
        }

        package var serving: Side
        package var candidate: Side
        package var caughtMore: Int
        package var caughtMoreAmount: Int64
        package var letThrough: Int
        package var letThroughAmount: Int64
        package var legitimateStepUpsAdded: Int
        package var legitimateStepUpsRemoved: Int
        package var legitimateDeclinesAdded: Int
        /// "catches 14 more confirmed frauds (₩3.2M), adds 210 step-ups to legitimate customers, …"
        package var summary: String

        package init(_ performance: Backtest.Performance) {
            func side(_ side: Backtest.SidePerformance) -> Side {
                Side(
                    fraud: side.fraud, legitimate: side.legitimate, fraudPassedGreen: side.fraudPassedGreen,
                    fraudPassedGreenAmount: side.fraudPassedGreenAmount, legitimateSteppedUp: side.legitimateSteppedUp,
                    legitimateDeclined: side.legitimateDeclined,
                    rules: side.rules.values.sorted { ($0.mode.rawValue, $0.ruleID) < ($1.mode.rawValue, $1.ruleID) }
                        .map {
                            Rule(
                                ruleId: $0.ruleID, mode: $0.mode.rawValue, fraud: $0.fraud, legitimate: $0.legitimate,
                                fraudAmount: $0.fraudAmount, precision: $0.precision, recall: side.recall($0),
                                missedFraud: side.fraud - $0.fraud)
                        })
            }
            serving = side(performance.current)
            candidate = side(performance.candidate)
            caughtMore = performance.caughtMore
            caughtMoreAmount = performance.caughtMoreAmount
            letThrough = performance.letThrough
            letThroughAmount = performance.letThroughAmount
            legitimateStepUpsAdded = performance.legitimateStepUpsAdded
            legitimateStepUpsRemoved = performance.legitimateStepUpsRemoved
            legitimateDeclinesAdded = performance.legitimateDeclinesAdded
            summary = performance.summary
        }
    }

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
        performance = report.performance.map(PerformanceView.init)
        changedAttempts = report.sample.map { change in
            Change(
                attemptId: change.attemptID, before: change.before.flow.description,
                after: change.after.flow.description,
                beforeHits: change.before.hits.map(HitView.init), afterHits: change.after.hits.map(HitView.init))
        }
    }
}
