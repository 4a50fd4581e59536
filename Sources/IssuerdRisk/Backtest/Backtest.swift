import Dispatch
import Foundation
import Synchronization

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

    /// Runs the replay of a JSONL history: every velocity value is counted from `log.events`.
    ///
    /// - Parameters:
    ///   - current: The ruleset serving today.
    ///   - candidate: The proposed ruleset.
    ///   - log: The attempts and the history events.
    ///   - sampleSize: How many changed attempts to keep.
    ///   - progress: Called every `progressEvery` attempts with (done, total).
    public static func run(
        current: Ruleset, candidate: Ruleset, log: AttemptLog, sampleSize: Int = 20,
        progressEvery: Int = 10_000, progress: (Int, Int) -> Void = { _, _ in }
    ) -> Report {
        run(
            current: current, candidate: candidate, attempts: log.attempts, recorded: nil,
            history: InMemoryVelocityProvider(events: log.events), sampleSize: sampleSize, progressEvery: progressEvery,
            progress: progress)
    }

    /// Runs the replay of `attempts` (in time order).
    ///
    /// A velocity value is the attempt's recorded one when `recorded` holds it (what its live
    /// decision read, see ``RecordedVelocity``), otherwise counted from `history`. Attempts are
    /// replayed `progressEvery` at a time, each batch split over `workers` threads (every
    /// attempt is independent of the others' decisions); counts are summed and the sample keeps
    /// the first changed attempts in time order, as a replay on one thread would.
    ///
    /// - Parameters:
    ///   - current: The ruleset serving today.
    ///   - candidate: The proposed ruleset.
    ///   - attempts: The attempts to replay, in time order.
    ///   - recorded: Recorded values, one row per attempt in the same order; nil counts every value from history.
    ///   - history: The history events: at least those of every (metric, key, id) a value is counted for.
    ///   - sampleSize: How many changed attempts to keep.
    ///   - workers: Threads to replay on.
    ///   - progress: Called every `progressEvery` attempts with (done, total), on the calling thread.
    public static func run(
        current: Ruleset, candidate: Ruleset, attempts: [AttemptLog.Attempt], recorded: RecordedVelocity?,
        history: InMemoryVelocityProvider, sampleSize: Int = 20, progressEvery: Int = 10_000,
        workers: Int = ProcessInfo.processInfo.activeProcessorCount,
        progress: (Int, Int) -> Void = { _, _ in }
    ) -> Report {
        let replay = Replay(
            current: current, candidate: candidate, recorded: recorded, history: history, sampleSize: sampleSize)
        var total = Partial(current: current, candidate: candidate)
        let batch = progressEvery > 0 ? progressEvery : max(attempts.count, 1)
        var start = 0
        while start < attempts.count {
            let end = min(start + batch, attempts.count)
            // Below a few hundred attempts a slice costs less than a thread's start.
            let slices = max(1, min(workers, (end - start) / 500))
            let size = (end - start + slices - 1) / slices
            let ranges = stride(from: start, to: end, by: size).map { $0..<min($0 + size, end) }
            if ranges.count == 1 {
                total.add(replay.run(attempts, ranges[0]), sampleSize: sampleSize)
            } else {
                let parts = Mutex<[Int: Partial]>([:])
                DispatchQueue.concurrentPerform(iterations: ranges.count) { index in
                    let part = replay.run(attempts, ranges[index])
                    parts.withLock { $0[index] = part }
                }
                parts.withLock { parts in
                    for index in ranges.indices {
                        if let part = parts[index] { total.add(part, sampleSize: sampleSize) }
                    }
                }
            }
            if progressEvery > 0, end % progressEvery == 0 { progress(end, attempts.count) }
            start = end
        }
        return Report(
            attempts: attempts.count, currentHits: HitCounter(current, hits: total.currentHits).counts,
            candidateHits: HitCounter(candidate, hits: total.candidateHits).counts, currentMix: total.mix(\.current),
            candidateMix: total.mix(\.candidate), transitions: total.transitionTable, sample: total.sample,
            changed: total.changed, currentUnresolved: total.currentUnresolved,
            candidateUnresolved: total.candidateUnresolved)
    }

    /// What one slice of attempts adds to the report. Counters are arrays (hits by
    /// ``Ruleset/invariantSlots`` position, `transitions[before][after]` by flow) rather than
    /// dictionaries: hashing a rule id per hit was a large part of the replay.
    private struct Partial: Sendable {
        var currentHits: [Int]
        var candidateHits: [Int]
        /// `transitions[before.rawValue * 3 + after.rawValue]`.
        var transitions = [Int](repeating: 0, count: Flow.allCases.count * Flow.allCases.count)
        var sample: [Change] = []
        var changed = 0
        var currentUnresolved = 0
        var candidateUnresolved = 0

        init(current: Ruleset, candidate: Ruleset) {
            currentHits = [Int](repeating: 0, count: Ruleset.invariantSlots.count + current.rules.count)
            candidateHits = [Int](repeating: 0, count: Ruleset.invariantSlots.count + candidate.rules.count)
        }

        /// Adds `other`, a later slice.
        mutating func add(_ other: Partial, sampleSize: Int) {
            for index in currentHits.indices { currentHits[index] += other.currentHits[index] }
            for index in candidateHits.indices { candidateHits[index] += other.candidateHits[index] }
            for index in transitions.indices { transitions[index] += other.transitions[index] }
            sample.append(contentsOf: other.sample.prefix(max(0, sampleSize - sample.count)))
            changed += other.changed
            currentUnresolved += other.currentUnresolved
            candidateUnresolved += other.candidateUnresolved
        }

        /// The flows seen under one ruleset (`\.current` or `\.candidate`), as the report's dictionary.
        func mix(_ side: KeyPath<(current: Flow, candidate: Flow), Flow>) -> [Flow: Int] {
            var mix: [Flow: Int] = [:]
            for before in Flow.allCases {
                for after in Flow.allCases {
                    let count = transitions[before.rawValue * Flow.allCases.count + after.rawValue]
                    if count > 0 { mix[(current: before, candidate: after)[keyPath: side], default: 0] += count }
                }
            }
            return mix
        }

        /// The transitions seen, as the report's nested dictionary.
        var transitionTable: [Flow: [Flow: Int]] {
            var table: [Flow: [Flow: Int]] = [:]
            for before in Flow.allCases {
                for after in Flow.allCases {
                    let count = transitions[before.rawValue * Flow.allCases.count + after.rawValue]
                    if count > 0 { table[before, default: [:]][after] = count }
                }
            }
            return table
        }
    }

    /// The replay of one attempt under both rulesets; shared read-only by the worker threads.
    private struct Replay: Sendable {
        let current: Ruleset
        let candidate: Ruleset
        let currentVelocity: RecordedVelocity.Lookup
        let candidateVelocity: RecordedVelocity.Lookup
        let history: InMemoryVelocityProvider
        let sampleSize: Int

        init(
            current: Ruleset, candidate: Ruleset, recorded: RecordedVelocity?, history: InMemoryVelocityProvider,
            sampleSize: Int
        ) {
            self.current = current
            self.candidate = candidate
            currentVelocity = RecordedVelocity.Lookup(current.velocityQueries, in: recorded)
            candidateVelocity = RecordedVelocity.Lookup(candidate.velocityQueries, in: recorded)
            self.history = history
            self.sampleSize = sampleSize
        }

        /// Counts through ``Ruleset/tally(_:velocity:checks:hits:)`` (the attempt's recorded
        /// checks applied, as the live path applied them); only a sampled changed attempt gets its
        /// two full decisions (``Ruleset/decide(_:velocity:checks:)``), from the same values.
        func run(_ attempts: [AttemptLog.Attempt], _ range: Range<Int>) -> Partial {
            var part = Partial(current: current, candidate: candidate)
            // Each attempt is read in place (`attempts[index]` at each use, borrowed): a local copy
            // of it retained and released its every field.
            var beforeValues: [Int?] = []
            var afterValues: [Int?] = []  // filled per attempt, allocated once
            attempts.withUnsafeBufferPointer { attempts in
                for index in range {
                    currentVelocity.fill(&beforeValues, attempt: index, attempts[index], history: history)
                    candidateVelocity.fill(&afterValues, attempt: index, attempts[index], history: history)
                    let before = current.tally(
                        attempts[index].input, velocity: beforeValues, checks: attempts[index].checks,
                        hits: &part.currentHits)
                    let after = candidate.tally(
                        attempts[index].input, velocity: afterValues, checks: attempts[index].checks,
                        hits: &part.candidateHits)
                    part.transitions[before.flow.rawValue * Flow.allCases.count + after.flow.rawValue] += 1
                    if before.unresolved { part.currentUnresolved += 1 }
                    if after.unresolved { part.candidateUnresolved += 1 }
                    if before.flow != after.flow {
                        part.changed += 1
                        if part.sample.count < sampleSize {
                            let attempt = attempts[index]
                            part.sample.append(
                                Change(
                                    attemptID: attempt.id,
                                    before: current.decide(
                                        attempt.input, velocity: beforeValues, checks: attempt.checks
                                    ).decision,
                                    after: candidate.decide(
                                        attempt.input, velocity: afterValues, checks: attempt.checks
                                    ).decision))
                        }
                    }
                }
            }
            return part
        }
    }

    /// Hit counts per rule id in the ruleset's order, the invariants and the request checks'
    /// hits first (those only when they hit).
    private struct HitCounter {
        var order: [String]
        var modes: [RuleMode]
        var hits: [Int]

        /// `hits` by ``Ruleset/invariantSlots`` position.
        init(_ ruleset: Ruleset, hits: [Int]) {
            order = Ruleset.invariantSlots + ruleset.rules.map(\.id)
            modes = Ruleset.invariantSlots.map { _ in .live } + ruleset.rules.map(\.mode)
            self.hits = hits
        }

        var counts: [RuleCount] {
            order.indices.compactMap { index in
                let id = order[index]
                let count = hits[index]
                if index < Ruleset.invariantSlots.count, count == 0 { return nil }
                return RuleCount(ruleID: id, mode: modes[index], hits: count)
            }
        }
    }
}
