import Dispatch
import Foundation
import IssuerdCore

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
        /// Serving against candidate over the attempts with an outcome; nil when none was given.
        public var performance: Performance? = nil
    }

    /// Runs the replay of a JSONL history: every velocity value is counted from `log.events`.
    ///
    /// - Parameters:
    ///   - current: The ruleset serving today.
    ///   - candidate: The proposed ruleset.
    ///   - log: The attempts and the history events.
    ///   - sampleSize: How many changed attempts to keep.
    ///   - progress: Called every `progressEvery` attempts with (done, total).
    ///   - changed: Given each batch's changed attempts, in time order (nil: none are collected).
    public static func run(
        current: Ruleset, candidate: Ruleset, log: AttemptLog, sampleSize: Int = 20,
        progressEvery: Int = 10_000, progress: (Int, Int) -> Void = { _, _ in },
        changed: (([ChangedAttempt]) -> Void)? = nil
    ) -> Report {
        run(
            current: current, candidate: candidate, attempts: log.attempts, recorded: nil,
            history: InMemoryVelocityProvider(events: log.events), sampleSize: sampleSize, progressEvery: progressEvery,
            progress: progress, changed: changed)
    }

    /// Runs the replay of `attempts` (in time order), all held in memory.
    ///
    /// A velocity value is the attempt's recorded one when `recorded` holds it (what its live
    /// decision read, see ``RecordedVelocity``), otherwise counted from `history`. Attempts are
    /// replayed `progressEvery` at a time through an ``Accumulator``, as a streaming backtest
    /// replays each slice it reads.
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
    ///   - changed: Given each batch's changed attempts, in time order (nil: none are collected).
    public static func run<History: BacktestVelocity>(
        current: Ruleset, candidate: Ruleset, attempts: [AttemptLog.Attempt], recorded: RecordedVelocity?,
        history: History, sampleSize: Int = 20, progressEvery: Int = 10_000,
        workers: Int = ProcessInfo.processInfo.activeProcessorCount,
        progress: (Int, Int) -> Void = { _, _ in }, changed: (([ChangedAttempt]) -> Void)? = nil
    ) -> Report {
        var accumulator = Accumulator(
            current: current, candidate: candidate, sampleSize: sampleSize, collectChanges: changed != nil,
            workers: workers)
        let batch = progressEvery > 0 ? progressEvery : max(attempts.count, 1)
        var start = 0
        while start < attempts.count {
            let end = min(start + batch, attempts.count)
            let changes = accumulator.add(attempts, start..<end, recorded: recorded, history: history)
            if let changed, !changes.isEmpty { changed(changes) }
            if progressEvery > 0, end % progressEvery == 0 { progress(end, attempts.count) }
            start = end
        }
        return accumulator.report
    }

    /// An attempt whose flow the candidate changes, as the export of changed attempts lists it.
    public struct ChangedAttempt: Sendable, Equatable {
        /// The attempt id.
        public var attemptID: String
        /// The decision time.
        public var time: Date
        /// `request.channel` as the attempt recorded it (a stored attempt's own column may name more).
        public var channel: String?
        /// The internal card id (never a PAN).
        public var cardID: String?
        /// The current ruleset's flow.
        public var before: Flow
        /// The candidate's flow.
        public var after: Flow
        /// The live rules (and request checks) that hit under the current ruleset only.
        public var currentOnly: [String]
        /// The live rules that hit under the candidate only.
        public var candidateOnly: [String]

        /// Creates the value from every stored property.
        public init(
            attemptID: String, time: Date, channel: String?, cardID: String?, before: Flow, after: Flow,
            currentOnly: [String], candidateOnly: [String]
        ) {
            self.attemptID = attemptID
            self.time = time
            self.channel = channel
            self.cardID = cardID
            self.before = before
            self.after = after
            self.currentOnly = currentOnly
            self.candidateOnly = candidateOnly
        }
    }

    /// Where an attempt of a slice read in pages is: its page, and its row in that page.
    public struct Position: Sendable, Equatable {
        public var page: Int32
        public var row: Int32

        /// Creates the value from every stored property.
        public init(page: Int32, row: Int32) {
            self.page = page
            self.row = row
        }
    }

    /// The tallies of a replay fed one batch of attempts at a time, in time order: what a
    /// streaming backtest keeps instead of the attempts (counts, the sample, nothing per attempt).
    public struct Accumulator: Sendable {
        private let replay: Replay
        private var total: Partial
        private let workers: Int
        /// Attempts replayed so far.
        public private(set) var attempts = 0

        /// An empty tally.
        ///
        /// - Parameters:
        ///   - collectChanges: Whether ``add(_:_:recorded:history:)`` returns the batch's changed attempts.
        ///   - workers: Threads each batch is replayed on.
        ///   - measuresOutcomes: Whether the report has `performance` (some attempt of the window
        ///     has an outcome): the labelled attempts each batch is given (``Labelled``) are also
        ///     decided in full under both rulesets and counted there.
        public init(
            current: Ruleset, candidate: Ruleset, sampleSize: Int = 20, collectChanges: Bool = false,
            workers: Int = ProcessInfo.processInfo.activeProcessorCount, measuresOutcomes: Bool = false
        ) {
            replay = Replay(
                current: current, candidate: candidate, sampleSize: sampleSize, collectChanges: collectChanges)
            total = Partial(current: current, candidate: candidate)
            self.workers = workers
            self.measuresOutcomes = measuresOutcomes
        }

        /// Whether the report has `performance`.
        private let measuresOutcomes: Bool

        /// Replays `attempts[range]` (later than every attempt added before), split over the
        /// workers: every attempt is independent of the others' decisions; counts are summed and
        /// the sample keeps the first changed attempts in time order, as one thread would.
        ///
        /// - Parameters:
        ///   - recorded: Recorded values by the same row index as `attempts`; nil counts every value.
        ///   - history: Counts the values not recorded (read only, from every worker).
        /// - Returns: The changed attempts of the range, in its order (none unless collected).
        public mutating func add<History: BacktestVelocity>(
            _ attempts: [AttemptLog.Attempt], _ range: Range<Int>, recorded: RecordedVelocity?, history: History
        ) -> [ChangedAttempt] {
            add(pages: [attempts], recorded: [recorded], order: nil, range, history: history)
        }

        /// Replays the attempts of `pages` (a slice as it was read, not copied into one array) in
        /// `order` (by time, then id; later than every attempt added before), as
        /// ``add(_:_:recorded:history:)`` replays one array.
        ///
        /// - Parameters:
        ///   - recorded: Each page's recorded values by the same row index; nil counts every value.
        ///   - order: Every attempt of the pages once, in time order.
        ///   - labels: The attempts of the slice with an outcome, by their index in `order`, in
        ///     that order (counted only when the accumulator measures outcomes).
        /// - Returns: The changed attempts, in `order`'s order (none unless collected).
        public mutating func add<History: BacktestVelocity>(
            pages: [[AttemptLog.Attempt]], recorded: [RecordedVelocity]?, order: [Position], history: History,
            labels: [Labelled] = []
        ) -> [ChangedAttempt] {
            add(
                pages: pages, recorded: recorded ?? pages.map { _ in nil }, order: order, order.indices,
                history: history, labels: measuresOutcomes ? labels : [])
        }

        private mutating func add<History: BacktestVelocity>(
            pages: [[AttemptLog.Attempt]], recorded: [RecordedVelocity?], order: [Position]?, _ range: Range<Int>,
            history: History, labels: [Labelled] = []
        ) -> [ChangedAttempt] {
            guard !range.isEmpty else { return [] }
            let sampleSize = replay.sampleSize
            let lookups = recorded.map {
                Lookups(
                    current: RecordedVelocity.Lookup(replay.current.velocityQueries, in: $0),
                    candidate: RecordedVelocity.Lookup(replay.candidate.velocityQueries, in: $0))
            }
            // Below a few hundred attempts a slice costs less than a thread's start.
            let slices = max(1, min(workers, range.count / 500))
            let size = (range.count + slices - 1) / slices
            let ranges = stride(from: range.lowerBound, to: range.upperBound, by: size).map {
                $0..<min($0 + size, range.upperBound)
            }
            var changes: [ChangedAttempt] = []
            if ranges.count == 1 {
                let part = replay.run(pages, lookups, order, ranges[0], history, labels)
                changes = part.changes
                total.add(part, sampleSize: sampleSize)
            } else {
                let parts = Lock<[Int: Partial]>([:])
                let replay = replay
                DispatchQueue.concurrentPerform(iterations: ranges.count) { index in
                    let part = replay.run(pages, lookups, order, ranges[index], history, labels)
                    parts.withLock { $0[index] = part }
                }
                parts.withLock { parts in
                    for index in ranges.indices {
                        guard let part = parts[index] else { continue }
                        changes += part.changes
                        total.add(part, sampleSize: sampleSize)
                    }
                }
            }
            self.attempts += range.count
            return changes
        }

        /// A page's recorded values as each ruleset reads them.
        fileprivate struct Lookups: Sendable {
            var current: RecordedVelocity.Lookup
            var candidate: RecordedVelocity.Lookup
        }

        /// The report of every attempt added.
        public var report: Report {
            Report(
                attempts: attempts, currentHits: HitCounter(replay.current, hits: total.currentHits).counts,
                candidateHits: HitCounter(replay.candidate, hits: total.candidateHits).counts,
                currentMix: total.mix(\.current), candidateMix: total.mix(\.candidate),
                transitions: total.transitionTable, sample: total.sample, changed: total.changed,
                currentUnresolved: total.currentUnresolved, candidateUnresolved: total.candidateUnresolved,
                performance: measuresOutcomes ? total.performance : nil)
        }
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
        /// This slice's changed attempts, when collected (not carried into the total).
        var changes: [ChangedAttempt] = []
        var changed = 0
        var currentUnresolved = 0
        var candidateUnresolved = 0
        var performance = Performance()

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
            performance.merge(other.performance)
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
        let sampleSize: Int
        let collectChanges: Bool

        /// Counts through ``Ruleset/tally(_:velocity:checks:hits:)`` (the attempt's recorded
        /// checks applied, as the live path applied them); only a sampled changed attempt gets
        /// its two full decisions (``Ruleset/decide(_:velocity:checks:)``), from the same values,
        /// and a collected one its two lists of live hits (``Ruleset/liveHitIDs(_:velocity:checks:scratch:)``).
        ///
        /// The attempts at `range` of `order` (page and row), or rows `range` of the only page
        /// without an order. The attempts of `labels` (by the same index, in order; a few per
        /// thousand) are also decided in full and counted against their outcomes: found by
        /// walking `labels` beside the range, not by a look-up per attempt (hashing every
        /// attempt's id was a tenth of a quarter's backtest).
        fileprivate func run<History: BacktestVelocity>(
            _ pages: [[AttemptLog.Attempt]], _ lookups: [Accumulator.Lookups], _ order: [Position]?,
            _ range: Range<Int>, _ history: History, _ labels: [Labelled]
        ) -> Partial {
            var part = Partial(current: current, candidate: candidate)
            // The first labelled attempt at or after the range.
            var nextLabel = labels.firstIndex { $0.index >= range.lowerBound } ?? labels.count
            // Each attempt is read in place (`attempts[index]` at each use, borrowed, a page's
            // buffer at a time over each run of positions in one page): a local copy of it, or an
            // array access per use, retained and released its every field.
            var beforeValues: [Int?] = []
            var afterValues: [Int?] = []  // filled per attempt, allocated once
            // Counters by pointer (``Ruleset/tallyRules(_:velocity:hits:)`` says why): the hits,
            // and the changed attempts' own (left all zero by each use).
            let currentHits = Self.counters(part.currentHits.count)
            let candidateHits = Self.counters(part.candidateHits.count)
            let beforeScratch = Self.counters(part.currentHits.count)
            let afterScratch = Self.counters(part.candidateHits.count)
            defer {
                for counters in [currentHits, candidateHits, beforeScratch, afterScratch] { counters.deallocate() }
            }
            let ordered = order ?? []
            var start = range.lowerBound
            while start < range.upperBound {
                let page = order == nil ? 0 : Int(ordered[start].page)
                var end = order == nil ? range.upperBound : start + 1
                while end < range.upperBound, Int(ordered[end].page) == page { end += 1 }
                let lookup = lookups[page]
                pages[page].withUnsafeBufferPointer { attempts in
                    for position in start..<end {
                        let index = order == nil ? position : Int(ordered[position].row)
                        let attempt = attempts.baseAddress! + index
                        lookup.current.fill(&beforeValues, attempt: index, at: attempt, history: history)
                        lookup.candidate.fill(&afterValues, attempt: index, at: attempt, history: history)
                        // Copied once for both rulesets (read in place, it was copied for each
                        // call all the same: a call that may write through a pointer could change it).
                        let input = attempts[index].input
                        let checks = attempts[index].checks
                        let before = current.tally(input, velocity: beforeValues, checks: checks, counters: currentHits)
                        let after = candidate.tally(
                            input, velocity: afterValues, checks: checks, counters: candidateHits)
                        part.transitions[before.flow.rawValue * Flow.allCases.count + after.flow.rawValue] += 1
                        if before.unresolved { part.currentUnresolved += 1 }
                        if after.unresolved { part.candidateUnresolved += 1 }
                        if nextLabel < labels.count, labels[nextLabel].index == position {
                            part.performance.add(
                                before: current.decide(input, velocity: beforeValues, checks: checks).decision,
                                after: candidate.decide(input, velocity: afterValues, checks: checks).decision,
                                label: labels[nextLabel].label)
                            nextLabel += 1
                        }
                        guard before.flow != after.flow else { continue }
                        part.changed += 1
                        if part.sample.count < sampleSize {
                            part.sample.append(
                                Change(
                                    attemptID: attempts[index].id,
                                    before: current.decide(input, velocity: beforeValues, checks: checks).decision,
                                    after: candidate.decide(input, velocity: afterValues, checks: checks).decision))
                        }
                        guard collectChanges else { continue }
                        // The live hits' ids alone (a changed attempt in eight, over a quarter: two
                        // full decisions each, with every value read, were a tenth of the replay).
                        let beforeRules = current.liveHitIDs(
                            input, velocity: beforeValues, checks: checks, scratch: beforeScratch)
                        let afterRules = candidate.liveHitIDs(
                            input, velocity: afterValues, checks: checks, scratch: afterScratch)
                        part.changes.append(
                            ChangedAttempt(
                                attemptID: attempts[index].id, time: attempts[index].time,
                                channel: input.channel?.name,
                                cardID: attempts[index].subject.cardID, before: before.flow, after: after.flow,
                                currentOnly: beforeRules.filter { !afterRules.contains($0) },
                                candidateOnly: afterRules.filter { !beforeRules.contains($0) }))
                    }
                }
                start = end
            }
            part.currentHits = Array(currentHits)
            part.candidateHits = Array(candidateHits)
            return part
        }

        /// `count` counters, all zero, for the caller to deallocate.
        private static func counters(_ count: Int) -> UnsafeMutableBufferPointer<Int> {
            let counters = UnsafeMutableBufferPointer<Int>.allocate(capacity: count)
            counters.initialize(repeating: 0)
            return counters
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
