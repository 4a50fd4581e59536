import Foundation
import IssuerdCore
import IssuerdRisk

/// The parsed attempts of complete past hours, kept in memory between backtests, so an
/// analyst's next run over the same period (edit the candidate, backtest again) reads and
/// parses only what is new.
///
/// Why it is exact: an attempt row is only ever inserted (issuerd never updates or deletes one),
/// and every use checks each kept hour against the snapshot the backtest reads: the hour's row
/// count and the sum of a hash of each row's id and `xmin` (its inserting transaction, which an
/// update by hand changes too) must equal what was kept, or the hour is read again. So a late
/// insert stamped in a kept hour, or a row changed or deleted by hand, is seen. Only hours that
/// ended at least ``lag`` ago are kept (a recent hour would be read again at once), and only for
/// windows of at most ``maximumHours`` hours.
///
/// Bounded: at most ``capacity`` attempts over all kept hours (an empty hour counts as one); the
/// hours used least recently go first (`ISSUERD_BACKTEST_CACHE_ATTEMPTS`, 0 keeps none).
public final class BacktestWindowCache: Sendable {
    /// What is kept per hour, and checked before use.
    package struct Fingerprint: Equatable, Sendable {
        /// The hour's rows.
        package var count: Int
        /// The wrapping sum of `uuid_hash_extended(attempt_id, xmin)` over them.
        package var hashSum: Int64

        package static let empty = Fingerprint(count: 0, hashSum: 0)
    }

    /// One kept hour: its attempts with their stored `features` text, and those values for the
    /// queries of the last run that used it (a next run with the same queries parses nothing).
    package struct Hour: Sendable {
        package var fingerprint: Fingerprint
        package var attempts: [AttemptLog.Attempt]
        /// Each attempt's cardholder name hash (distinct-name history), by the same index.
        package var names: [String?]
        package var features: [String]
        package var recorded: RecordedVelocity

        /// Creates the value from every stored property.
        package init(
            fingerprint: Fingerprint, attempts: [AttemptLog.Attempt], names: [String?], features: [String],
            recorded: RecordedVelocity
        ) {
            self.fingerprint = fingerprint
            self.attempts = attempts
            self.names = names
            self.features = features
            self.recorded = recorded
        }
    }

    /// How long after an hour ends before it is kept (as ``ConsoleRollup/lag``).
    package static let lag: TimeInterval = ConsoleRollup.lag

    /// The longest window whose hours are kept or looked up: the console's longest period (90
    /// days) and a little more. A longer one is read whole, as without a cache, so a window over
    /// years (of few attempts) costs no per-hour work and does not fill the cache with empty hours.
    package static let maximumHours = 92 * 24

    /// The most attempts kept.
    package let capacity: Int
    /// Told the hits and misses of each backtest (the server's metrics).
    private let counted: (@Sendable (_ hits: Int, _ misses: Int) -> Void)?

    private struct State {
        var hours: [Int64: Hour] = [:]
        /// Hours by last use, least recent first.
        var order: [Int64] = []
        /// The kept hours' weight (``BacktestWindowCache/weight(_:)``).
        var weight = 0
        /// The attempts in the kept hours.
        var attempts = 0
        var hits = 0
        var misses = 0
    }
    private let state = Lock(State())

    /// A cache of at most `capacity` attempts; `counted` is told each backtest's hits and misses.
    public init(capacity: Int, counted: (@Sendable (_ hits: Int, _ misses: Int) -> Void)? = nil) {
        self.capacity = max(0, capacity)
        self.counted = counted
    }

    /// The complete hours of `[since, until)` that ended at least ``lag`` before `now`, when
    /// there is one and at most ``maximumHours``.
    package static func keptHours(since: Date, until: Date, now: Date) -> ClosedRange<Int64>? {
        let first = Int64((since.timeIntervalSince1970 / 3600).rounded(.up))
        let end = Int64((min(until, now.addingTimeInterval(-lag)).timeIntervalSince1970 / 3600).rounded(.down))
        return first < end && end - first <= Int64(maximumHours) ? first...(end - 1) : nil
    }

    /// The kept hours among `hours` (nothing is checked here: the caller compares fingerprints).
    package func lookup(_ hours: ClosedRange<Int64>) -> [Int64: Hour] {
        state.withLock { state in
            var found: [Int64: Hour] = [:]
            for hour in hours { if let kept = state.hours[hour] { found[hour] = kept } }
            return found
        }
    }

    /// Marks `used` as used now (those still kept) and counts the hits and misses of one backtest.
    package func touch(_ used: [Int64], misses: Int) {
        state.withLock { state in
            let set = Set(used)
            state.order.removeAll { set.contains($0) }
            state.order.append(contentsOf: used.filter { state.hours[$0] != nil })
            state.hits += used.count
            state.misses += misses
        }
        counted?(used.count, misses)
    }

    /// Keeps each of `hours` (replacing what was kept), then drops the least recently used hours
    /// past ``capacity``. An hour counts its attempts, at least one (an empty hour is kept too, so
    /// a quiet night is not read again); an hour larger than the capacity is not kept.
    package func store(_ hours: [(hour: Int64, content: Hour)]) {
        let fitting = hours.filter { Self.weight($0.content) <= capacity }
        guard !fitting.isEmpty else { return }
        state.withLock { state in
            let replaced = Set(fitting.map(\.hour))
            state.order.removeAll { replaced.contains($0) }
            for (hour, content) in fitting {
                if let old = state.hours.updateValue(content, forKey: hour) {
                    state.weight -= Self.weight(old)
                    state.attempts -= old.attempts.count
                }
                state.weight += Self.weight(content)
                state.attempts += content.attempts.count
                state.order.append(hour)
            }
            var dropped = 0
            while state.weight > capacity, dropped < state.order.count {
                if let old = state.hours.removeValue(forKey: state.order[dropped]) {
                    state.weight -= Self.weight(old)
                    state.attempts -= old.attempts.count
                }
                dropped += 1
            }
            state.order.removeFirst(dropped)
        }
    }

    private static func weight(_ hour: Hour) -> Int { max(1, hour.attempts.count) }

    /// Replaces the recorded values kept for hour `hour` by `recorded` (another run's queries),
    /// when the hour is still kept as `fingerprint`.
    package func remember(_ recorded: RecordedVelocity, hour: Int64, fingerprint: Fingerprint) {
        state.withLock { state in
            guard state.hours[hour]?.fingerprint == fingerprint else { return }
            state.hours[hour]?.recorded = recorded
        }
    }

    /// What is kept now (hours, and the attempts in them), and the hours found and not found
    /// since start.
    public var statistics: (hours: Int, attempts: Int, hits: Int, misses: Int) {
        state.withLock { ($0.hours.count, $0.attempts, $0.hits, $0.misses) }
    }
}
