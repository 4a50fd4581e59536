import Dispatch
import Foundation
import IssuerdCore

/// Velocity over a list of history events held in memory, as of any decision time.
///
/// Used by tests and by `rules backtest`: each attempt is replayed with the history that
/// existed just before it, so velocity rules can be backtested. Immutable after init.
public struct InMemoryVelocityProvider: VelocityProvider {
    private struct Bucket: Hashable {
        var kind: VelocityEvent.Kind
        var key: VelocityKey
        var id: String
    }

    private struct Entry {
        var time: Double
        var cardID: String?
        var cardholderName: String?

        init(_ event: VelocityEvent) {
            time = event.time.timeIntervalSince1970
            cardID = event.cardID
            cardholderName = event.cardholderName
        }
    }

    /// The buckets, in shards by the hash of their id (``shard(of:count:)``), built at the same
    /// time on as many cores: a day's backtest indexes ~70,000 events, which on one core was
    /// a tenth of its wall time.
    private let shards: [[Bucket: [Entry]]]

    /// Indexes `events` by kind and subject key; order does not matter.
    public init(events: [VelocityEvent]) {
        self.init(events: events, keyed: [])
    }

    /// Indexes `events` under each key they carry, and each group of `keyed` under its one key only.
    ///
    /// `keyed` is history read per key (the backtest reads, for each key a query needs, the
    /// events of that key's ids): an event reached through its card is indexed under its card
    /// alone, so reading it again through its device does not count it twice for the card. Its
    /// `cardID` and `cardholderName` still count for the distinct metrics. (Groups as they were
    /// read: pairing each event with its key first copied ~100,000 of them into one array.)
    /// Groups given in time order (each, and one after another for a key) leave little to sort.
    ///
    /// - Parameter workers: How many shards are built at once (one below 10,000 events).
    public init(
        events: [VelocityEvent], keyed: [(key: VelocityKey, events: [VelocityEvent])],
        workers: Int = ProcessInfo.processInfo.activeProcessorCount
    ) {
        // `events` under each key they carry: one group per key (the arrays are shared, not copied).
        let groups = (events.isEmpty ? [] : VelocityKey.allCases.map { (key: $0, events: events) }) + keyed
        let total = groups.reduce(0) { $0 + $1.events.count }
        let count = total < 10_000 ? 1 : max(1, min(workers, 8))
        // Each event's shard, from its id's hash (so ids equal as strings, canonically
        // equivalent ones included, share a shard), computed once on every core; 255: no id.
        let shardOf =
            count == 1 ? [] : groups.map { group in Self.shards(of: group.events, key: group.key, count: count) }
        let built = Lock([[Bucket: [Entry]]](repeating: [:], count: count))
        DispatchQueue.concurrentPerform(iterations: count) { shard in
            var buckets: [Bucket: [Entry]] = [:]
            // At most one bucket per event; shards by hash come out uneven by a little.
            buckets.reserveCapacity(count == 1 ? total : total / count + total / (4 * count))
            for group in groups.indices {
                let key = groups[group].key
                for index in groups[group].events.indices {
                    guard count == 1 || Int(shardOf[group][index]) == shard,
                        let id = groups[group].events[index].id(for: key)
                    else { continue }
                    let event = groups[group].events[index]
                    buckets[Bucket(kind: event.kind, key: key, id: id), default: []].append(Entry(event))
                }
            }
            // In place through the values view (iterating `keys` while assigning copied the whole table).
            var index = buckets.values.startIndex
            while index != buckets.values.endIndex {
                if buckets.values[index].count > 1, !Self.inTimeOrder(buckets.values[index]) {
                    buckets.values[index].sort { $0.time < $1.time }
                }
                index = buckets.values.index(after: index)
            }
            built.withLock { $0[shard] = buckets }
        }
        shards = built.withLock { $0 }
    }

    /// The shard of the buckets of `id` among `count`.
    private static func shard(of id: String, count: Int) -> Int {
        count == 1 ? 0 : Int(UInt(bitPattern: id.hashValue) % UInt(count))
    }

    /// The shard of each event's `key` id (255 where it has none), in slices on every core.
    private static func shards(of events: [VelocityEvent], key: VelocityKey, count: Int) -> [UInt8] {
        [UInt8](count: events.count, inSlices: min(count, events.count / 5_000)) { index in
            events[index].id(for: key).map { UInt8(Self.shard(of: $0, count: count)) } ?? 255
        }
    }

    /// Answers every query from the events in `[time − window, time)`.
    public func values(for batch: VelocityBatch) -> [Int?] {
        batch.queries.map { value(of: $0, subject: batch.subject, at: batch.time) }
    }

    /// Answers one query for `subject` as of `time` from the events in `[time − window, time)`
    /// (a backtest asks this for each value its attempt did not record, without a batch).
    public func value(of query: VelocityQuery, subject: VelocitySubject, at time: Date) -> Int? {
        guard let id = subject.id(for: query.key) else { return nil }
        guard
            let entries = shards[Self.shard(of: id, count: shards.count)][
                Bucket(kind: query.metric.eventKind, key: query.key, id: id)]
        else { return 0 }
        let now = time.timeIntervalSince1970
        let lower = entries.firstIndex(notBefore: now - Double(query.windowSeconds), time: \.time)
        let upper = entries.firstIndex(notBefore: now, time: \.time)
        guard lower < upper else { return 0 }
        let window = entries[lower..<upper]
        switch query.metric {
        case .distinctCards: return Set(window.compactMap(\.cardID)).count
        case .distinctNames: return Set(window.compactMap { $0.cardholderName.map(Self.normalizedName) }).count
        default: return window.count
        }
    }

    /// Names differing only in case or spacing are one cardholder.
    static func normalizedName(_ name: String) -> String {
        name.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// Whether `entries` are in time order (history read in order mostly is).
    private static func inTimeOrder(_ entries: [Entry]) -> Bool {
        var previous = -Double.infinity
        for index in entries.indices {
            if entries[index].time < previous { return false }
            previous = entries[index].time
        }
        return true
    }
}
