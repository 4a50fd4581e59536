import Foundation
import IssuerdRisk
import Synchronization

/// The parsed attempts of complete past hours, kept in memory between backtests, so an
/// analyst's next run over the same period (edit the candidate, backtest again) reads and
/// parses only what is new.
///
/// Why it is exact: an attempt row is only ever inserted (issuerd never updates or deletes one),
/// and every use checks each kept hour against the snapshot the backtest reads: the hour's row
/// count and the sum of its rows' `xmin` (the inserting transaction; an update or a delete and
/// re-insert by hand changes it too) must equal what was kept, or the hour is read again. So a
/// late insert stamped in a kept hour, or any change to its rows, is seen. Only hours that ended
/// more than ``lag`` ago are kept (a recent hour would be read again at once).
///
/// Bounded: at most ``capacity`` attempts over all kept hours (an empty hour counts as one); the
/// hours used least recently go first (`ISSUERD_BACKTEST_CACHE_ATTEMPTS`, 0 keeps none).
public final class BacktestWindowCache: Sendable {
    /// What is kept per hour, and checked before use.
    struct Fingerprint: Equatable, Sendable {
        /// The hour's rows.
        var count: Int
        /// The sum of their `xmin` values.
        var xminSum: Int64
    }

    /// One kept hour: its attempts with their stored `features` text, and those values for the
    /// queries of the last run that used it (a next run with the same queries parses nothing).
    struct Hour: Sendable {
        var fingerprint: Fingerprint
        var attempts: [(AttemptLog.Attempt, String?)]
        var features: [String]
        var recorded: RecordedVelocity
    }

    /// How long after an hour ends before it is kept (as ``ConsoleRollup/lag``).
    static let lag: TimeInterval = ConsoleRollup.lag

    /// The most attempts kept.
    let capacity: Int

    private struct State {
        var hours: [Int64: Hour] = [:]
        /// Hours by last use, least recent first.
        var order: [Int64] = []
        /// The kept hours' weight (``BacktestWindowCache/weight(_:)``).
        var attempts = 0
        var hits = 0
        var misses = 0
    }
    private let state = Mutex(State())

    /// A cache of at most `capacity` attempts.
    public init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The complete hours of `[since, until)` that ended at least ``lag`` before `now`.
    static func keptHours(since: Date, until: Date, now: Date) -> ClosedRange<Int64>? {
        let first = Int64((since.timeIntervalSince1970 / 3600).rounded(.up))
        let end = Int64((min(until, now.addingTimeInterval(-lag)).timeIntervalSince1970 / 3600).rounded(.down))
        return first < end ? first...(end - 1) : nil
    }

    /// The kept hours among `hours` (nothing is checked here: the caller compares fingerprints).
    func lookup(_ hours: ClosedRange<Int64>) -> [Int64: Hour] {
        state.withLock { state in
            var found: [Int64: Hour] = [:]
            for hour in hours { if let kept = state.hours[hour] { found[hour] = kept } }
            return found
        }
    }

    /// Marks `used` as used now and counts the hits and misses of one backtest.
    func touch(_ used: [Int64], misses: Int) {
        state.withLock { state in
            let set = Set(used)
            state.order.removeAll { set.contains($0) }
            state.order.append(contentsOf: used)
            state.hits += used.count
            state.misses += misses
        }
    }

    /// Keeps each of `hours` (replacing what was kept), then drops the least recently used hours
    /// past ``capacity``. An hour counts its attempts, at least one (an empty hour is kept too, so
    /// a quiet night is not read again); an hour larger than the capacity is not kept.
    func store(_ hours: [(hour: Int64, content: Hour)]) {
        let fitting = hours.filter { Self.weight($0.content) <= capacity }
        guard !fitting.isEmpty else { return }
        state.withLock { state in
            let replaced = Set(fitting.map(\.hour))
            state.order.removeAll { replaced.contains($0) }
            for (hour, content) in fitting {
                if let old = state.hours.updateValue(content, forKey: hour) { state.attempts -= Self.weight(old) }
                state.attempts += Self.weight(content)
                state.order.append(hour)
            }
            var dropped = 0
            while state.attempts > capacity, dropped < state.order.count {
                state.attempts -= state.hours.removeValue(forKey: state.order[dropped]).map(Self.weight) ?? 0
                dropped += 1
            }
            state.order.removeFirst(dropped)
        }
    }

    private static func weight(_ hour: Hour) -> Int { max(1, hour.attempts.count) }

    /// Replaces the recorded values kept for hour `hour` by `recorded` (another run's queries),
    /// when the hour is still kept as `fingerprint`.
    func remember(_ recorded: RecordedVelocity, hour: Int64, fingerprint: Fingerprint) {
        state.withLock { state in
            guard state.hours[hour]?.fingerprint == fingerprint else { return }
            state.hours[hour]?.recorded = recorded
        }
    }

    /// What is kept now (hours, and the attempts in them), and the hours found and not found
    /// since start.
    public var statistics: (hours: Int, attempts: Int, hits: Int, misses: Int) {
        state.withLock { state in (state.hours.count, state.hours.values.reduce(0) { $0 + $1.attempts.count }, state.hits, state.misses) }
    }
}
