import Foundation

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

    private let buckets: [Bucket: [Entry]]

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
    public init(events: [VelocityEvent], keyed: [(key: VelocityKey, events: [VelocityEvent])]) {
        var buckets: [Bucket: [Entry]] = [:]
        buckets.reserveCapacity(keyed.reduce(events.count) { $0 + $1.events.count })  // at most one bucket per keyed event
        for event in events {
            let entry = Entry(event)
            for key in VelocityKey.allCases {
                guard let id = event.id(for: key) else { continue }
                buckets[Bucket(kind: event.kind, key: key, id: id), default: []].append(entry)
            }
        }
        for group in keyed.indices {
            let key = keyed[group].key
            for index in keyed[group].events.indices {
                let event = keyed[group].events[index]
                guard let id = event.id(for: key) else { continue }
                let entry = Entry(event)
                buckets[Bucket(kind: event.kind, key: key, id: id), default: []].append(entry)
            }
        }
        // In place through the values view (iterating `keys` while assigning copied the whole table).
        var index = buckets.values.startIndex
        while index != buckets.values.endIndex {
            if buckets.values[index].count > 1, !Self.inTimeOrder(buckets.values[index]) { buckets.values[index].sort { $0.time < $1.time } }
            index = buckets.values.index(after: index)
        }
        self.buckets = buckets
    }

    /// Answers every query from the events in `[time − window, time)`.
    public func values(for batch: VelocityBatch) -> [Int?] {
        batch.queries.map { value(of: $0, subject: batch.subject, at: batch.time) }
    }

    /// Answers one query for `subject` as of `time` from the events in `[time − window, time)`
    /// (a backtest asks this for each value its attempt did not record, without a batch).
    public func value(of query: VelocityQuery, subject: VelocitySubject, at time: Date) -> Int? {
        guard let id = subject.id(for: query.key) else { return nil }
        guard let entries = buckets[Bucket(kind: query.metric.eventKind, key: query.key, id: id)] else { return 0 }
        let now = time.timeIntervalSince1970
        let lower = Self.firstIndex(in: entries, notBefore: now - Double(query.windowSeconds))
        let upper = Self.firstIndex(in: entries, notBefore: now)
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

    private static func firstIndex(in entries: [Entry], notBefore time: Double) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].time < time { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
