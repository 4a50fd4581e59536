/// Replays stored attempts through the current and a candidate ruleset, with velocity as of
/// each attempt, and summarises the difference (`rules backtest`).
public enum Backtest {
    /// Hit counts of one rule.
    public struct RuleCount: Sendable, Hashable {
        /// The rule id (or an `invariant.*` id).
        public var ruleID: String
        /// The rule's mode in that ruleset.
        public var mode: RuleMode
        /// Attempts on which it hit.
        public var hits: Int
    }

    /// An attempt whose flow differs between the two rulesets.
    public struct Change: Sendable {
        /// The attempt id from the export.
        public var attemptID: String
        /// The current ruleset's decision.
        public var before: RiskDecision
        /// The candidate's decision.
        public var after: RiskDecision
    }

    /// The summary `rules backtest` prints.
    public struct Report: Sendable {
        /// Attempts replayed.
        public var attempts: Int
        /// Per-rule hits (live and shadow) under the current ruleset, in its rule order.
        public var currentHits: [RuleCount]
        /// The same under the candidate.
        public var candidateHits: [RuleCount]
        /// Flows under the current ruleset.
        public var currentMix: [Flow: Int]
        /// Flows under the candidate.
        public var candidateMix: [Flow: Int]
        /// `transitions[before][after]` counts.
        public var transitions: [Flow: [Flow: Int]]
        /// The first changed attempts, up to the sample size.
        public var sample: [Change]
        /// All changed attempts.
        public var changed: Int
        /// Decisions with at least one unresolved rule (a value was unknown), current ruleset.
        public var currentUnresolved: Int
        /// The same under the candidate.
        public var candidateUnresolved: Int
    }

    /// Runs the replay.
    ///
    /// - Parameters:
    ///   - current: The ruleset serving today.
    ///   - candidate: The proposed ruleset.
    ///   - log: The attempts and the history events.
    ///   - sampleSize: How many changed attempts to keep.
    ///   - progress: Called every `progressEvery` attempts with (done, total).
    public static func run(current: Ruleset, candidate: Ruleset, log: AttemptLog, sampleSize: Int = 20,
                           progressEvery: Int = 10_000, progress: (Int, Int) -> Void = { _, _ in }) -> Report {
        let provider = InMemoryVelocityProvider(events: log.events)
        var currentCounter = HitCounter(current)
        var candidateCounter = HitCounter(candidate)
        var report = Report(attempts: 0, currentHits: [], candidateHits: [], currentMix: [:], candidateMix: [:], transitions: [:],
                            sample: [], changed: 0, currentUnresolved: 0, candidateUnresolved: 0)
        let total = log.attempts.count
        for (index, attempt) in log.attempts.enumerated() {
            let before = current.evaluate(attempt.input, velocity: provider.values(for: VelocityBatch(subject: attempt.subject, time: attempt.time, queries: current.velocityQueries)))
            let after = candidate.evaluate(attempt.input, velocity: provider.values(for: VelocityBatch(subject: attempt.subject, time: attempt.time, queries: candidate.velocityQueries)))
            currentCounter.count(before)
            candidateCounter.count(after)
            report.currentMix[before.flow, default: 0] += 1
            report.candidateMix[after.flow, default: 0] += 1
            report.transitions[before.flow, default: [:]][after.flow, default: 0] += 1
            if !before.unresolved.isEmpty { report.currentUnresolved += 1 }
            if !after.unresolved.isEmpty { report.candidateUnresolved += 1 }
            if before.flow != after.flow {
                report.changed += 1
                if report.sample.count < sampleSize {
                    report.sample.append(Change(attemptID: attempt.id, before: before, after: after))
                }
            }
            if progressEvery > 0, (index + 1) % progressEvery == 0 { progress(index + 1, total) }
        }
        report.attempts = total
        report.currentHits = currentCounter.counts
        report.candidateHits = candidateCounter.counts
        return report
    }

    /// Counts hits per rule id, keeping the ruleset's order and the invariants first.
    private struct HitCounter {
        var order: [String]
        var modes: [String: RuleMode]
        var hits: [String: Int] = [:]

        init(_ ruleset: Ruleset) {
            order = [Invariants.walletDeclined, Invariants.walletRequiresAuthentication, Invariants.cardUnusable, Invariants.noStepUpMethod]
                + ruleset.rules.map(\.id)
            modes = Dictionary(uniqueKeysWithValues: ruleset.rules.map { ($0.id, $0.mode) })
        }

        mutating func count(_ decision: RiskDecision) {
            for hit in decision.hits { hits[hit.ruleID, default: 0] += 1 }
        }

        var counts: [RuleCount] {
            order.compactMap { id in
                let count = hits[id] ?? 0
                if id.hasPrefix("invariant."), count == 0 { return nil }
                return RuleCount(ruleID: id, mode: modes[id] ?? .live, hits: count)
            }
        }
    }
}
