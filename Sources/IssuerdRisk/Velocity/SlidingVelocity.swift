import Dispatch
import Foundation

/// Velocity over history fed in time order, holding per key only the events the longest window
/// of their metric can still reach: a streaming backtest's memory is bounded by the keys active
/// within that window, not by the length of the period replayed.
///
/// Feed the history before the period (``add(_:under:)``), then each slice of the period in
/// time order (its attempts and the other events up to its end); ask values as of any time not
/// before the last ``evict(before:)``. A value is what ``InMemoryVelocityProvider`` answers over
/// the same events: the events in `[time − window, time)`, so events fed ahead of the times
/// asked (the rest of a slice) are not counted.
///
/// The ids are spread over ``parts`` by a hash of their text (``ID``), each part holding its own
/// ids' events: batches (``add(contentsOf:under:)``) and evictions run on every core, one part per
/// thread, and a value reads only its id's part, so the answers are those of one part.
public struct SlidingVelocity: Sendable {
    /// The events of one (kind, key) group, per id, each id's in time order.
    fileprivate struct Group: Sendable {
        /// The longest window of the group's queries: older events are never read again.
        var horizon: Double
        /// The oldest time kept at the last eviction.
        var evictedThrough = -Double.infinity
        var entries: [ID: [Entry]] = [:]
        /// Events held.
        var count = 0
        /// Whether its events keep their card id (some query counts distinct cards) and their
        /// cardholder name (distinct names): otherwise neither is kept, and an event is its time
        /// (holding, copying and freeing two strings per event was most of the history's cost).
        var cards = false
        var names = false
    }

    fileprivate struct Entry: Sendable {
        var time: Double
        var cardID: String?
        var cardholderName: String?
    }

    /// An id with its hash, computed once per event or value: the part the id is in and its
    /// place in that part's dictionary both come from it (the dictionary hashed every string
    /// again, byte by byte, at each look-up). Ids equal as strings have one hash: FNV-1a over the
    /// UTF-8 bytes of the text, or of its canonical composition (NFC) when it is not all ASCII
    /// (the Kelvin sign and "K" are one id, as they are to a `String` key and to
    /// ``InMemoryVelocityProvider``).
    fileprivate struct ID: Hashable, Sendable {
        let hash: UInt64
        let text: String

        init(_ text: String) {
            self.text = text
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            var high: UInt8 = 0
            for byte in text.utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
                high |= byte
            }
            if high >= 0x80 {
                hash = 0xcbf2_9ce4_8422_2325
                for byte in text.precomposedStringWithCanonicalMapping.utf8 {
                    hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
                }
            }
            self.hash = hash
        }

        static func == (left: ID, right: ID) -> Bool { left.hash == right.hash && left.text == right.text }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    /// One part's groups by ``index(_:_:)``; nil for a group no query reads.
    fileprivate struct Part: Sendable {
        var groups: [Group?]
    }

    /// The parts, an id in the one ``part(of:)`` names.
    private var parts: [Part]
    /// The groups' windows, as every part keeps them (nil: not kept).
    private var horizons: [Double?]
    /// The keys some query reads attempts by.
    public private(set) var attemptKeys: [VelocityKey]
    /// The longest window of any query, in seconds: how far back history must be fed.
    public private(set) var lookbackSeconds: Int

    private static let keys = VelocityKey.allCases

    /// State for `queries` (the rulesets' velocity queries, each kept for its group's longest window).
    ///
    /// - Parameter parts: How many parts the ids are spread over (by default one per core).
    public init(queries: [VelocityQuery], parts: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.parts = [Part](repeating: Part(groups: [Group?](repeating: nil, count: 4 * 3)), count: max(1, parts))
        horizons = [Double?](repeating: nil, count: 4 * 3)
        attemptKeys = []
        lookbackSeconds = 0
        _ = include(queries)
    }

    /// The part holding `id`'s events (any spread will do, the answers are the same).
    private func part(of id: ID) -> Int {
        parts.count > 1 ? Int(id.hash % UInt64(parts.count)) : 0
    }

    /// One (kind, key) group and the window it keeps.
    public struct GroupWindow: Sendable, Equatable {
        public var kind: VelocityEvent.Kind
        public var key: VelocityKey
        public var seconds: Int

        /// Creates the value from every stored property.
        public init(kind: VelocityEvent.Kind, key: VelocityKey, seconds: Int) {
            self.kind = kind
            self.key = key
            self.seconds = seconds
        }
    }

    /// Keeps history for `queries` too, from now on.
    ///
    /// - Returns: The groups that start empty (new ones, and those whose window grows: their
    ///   events are dropped, since older ones were evicted): feed each the history of its window
    ///   before the next values asked, under its key only (``add(_:under:)``).
    public mutating func include(_ queries: [VelocityQuery]) -> [GroupWindow] {
        var reset: [GroupWindow] = []
        for query in queries {
            let index = Self.index(query.metric.eventKind, query.key)
            let horizon = Double(query.windowSeconds)
            let cards = query.metric == .distinctCards || (parts[0].groups[index]?.cards ?? false)
            let names = query.metric == .distinctNames || (parts[0].groups[index]?.names ?? false)
            if let kept = horizons[index], kept >= horizon, cards == parts[0].groups[index]?.cards,
                names == parts[0].groups[index]?.names
            {
                continue
            }
            // A group that must keep more of each event starts again too, over its longest window.
            let seconds = max(horizons[index] ?? 0, horizon)
            horizons[index] = seconds
            var group = Group(horizon: seconds)
            group.cards = cards
            group.names = names
            for part in parts.indices { parts[part].groups[index] = group }
            reset.removeAll { $0.kind == query.metric.eventKind && $0.key == query.key }
            reset.append(GroupWindow(kind: query.metric.eventKind, key: query.key, seconds: Int(seconds)))
        }
        attemptKeys = Self.keys.filter { horizons[Self.index(.attempt, $0)] != nil }
        lookbackSeconds = max(lookbackSeconds, queries.map(\.windowSeconds).max() ?? 0)
        return reset
    }

    /// Whether values of `query` are counted here (its group is kept for at least its window,
    /// with the card ids or names a distinct query counts).
    public func counts(_ query: VelocityQuery) -> Bool {
        let index = Self.index(query.metric.eventKind, query.key)
        guard let horizon = horizons[index], horizon >= Double(query.windowSeconds) else { return false }
        switch query.metric {
        case .distinctCards: return parts[0].groups[index]?.cards ?? false
        case .distinctNames: return parts[0].groups[index]?.names ?? false
        default: return true
        }
    }

    private static func index(_ kind: VelocityEvent.Kind, _ key: VelocityKey) -> Int {
        let kindIndex =
            switch kind {
            case .attempt: 0
            case .otpFailure: 1
            case .tokenDeletion: 2
            case .stepUpFailure: 3
            }
        let keyIndex =
            switch key {
            case .card: 0
            case .device: 1
            case .customer: 2
            }
        return kindIndex * 3 + keyIndex
    }

    /// Whether some query reads events of `kind` by `key`.
    public func reads(_ kind: VelocityEvent.Kind, by key: VelocityKey) -> Bool {
        horizons[Self.index(kind, key)] != nil
    }

    /// Adds `event` under `key` only (history read per key), when a query reads that group and
    /// the event carries an id for it. Events mostly come in time order (one out of order is moved
    /// into place).
    public mutating func add(_ event: VelocityEvent, under key: VelocityKey) {
        let index = Self.index(event.kind, key)
        guard horizons[index] != nil, let text = event.id(for: key) else { return }
        let id = ID(text)
        withUnsafePointer(to: event) { parts[part(of: id)].add($0, id: id, group: index) }
    }

    /// Adds `events` under `key` only, or under every key each carries when `key` is nil, as
    /// ``add(_:under:)`` and ``add(_:)`` would one by one: sorted by part here, then added on
    /// every core, a part per thread.
    public mutating func add(contentsOf events: [VelocityEvent], under key: VelocityKey? = nil) {
        guard parts.count > 1, events.count >= 2_000 else {
            for event in events {
                if let key { add(event, under: key) } else { add(event) }
            }
            return
        }
        // (event, group) pairs per part, in the events' order.
        var batches = [[(event: Int, id: ID, group: Int)]](repeating: [], count: parts.count)
        for batch in batches.indices { batches[batch].reserveCapacity(events.count / parts.count + 64) }
        for (position, event) in events.enumerated() {
            for candidate in key.map({ [$0] }) ?? Self.keys {
                let index = Self.index(event.kind, candidate)
                guard horizons[index] != nil, let text = event.id(for: candidate) else { continue }
                let id = ID(text)
                batches[part(of: id)].append((position, id, index))
            }
        }
        let sorted = batches
        // Each event read in place, through its address (passed by value, it was copied whole).
        events.withUnsafeBufferPointer { events in
            let events = SharedEvents(events: events)
            parts.withUnsafeMutableBufferPointer { parts in
                let shared = SharedParts(parts: parts)
                DispatchQueue.concurrentPerform(iterations: shared.parts.count) { part in
                    for item in sorted[part] {
                        shared.parts[part].add(events.events.baseAddress! + item.event, id: item.id, group: item.group)
                    }
                }
            }
        }
    }

    /// @unchecked Sendable: each of ``add(contentsOf:under:)``'s and ``evict(before:slack:)``'s
    /// threads changes its own part only, and the buffer outlives them (concurrentPerform waits).
    private struct SharedParts: @unchecked Sendable {
        let parts: UnsafeMutableBufferPointer<Part>
    }

    /// @unchecked Sendable: ``add(contentsOf:under:)``'s threads only read the events, which
    /// outlive them.
    private struct SharedEvents: @unchecked Sendable {
        let events: UnsafeBufferPointer<VelocityEvent>
    }

    /// Appends `entry`, moved back past any later one (history read by time mostly comes in order).
    fileprivate static func insert(_ entry: Entry, into entries: inout [Entry]) {
        entries.append(entry)
        var position = entries.count - 1
        while position > 0, entries[position - 1].time > entry.time {
            entries.swapAt(position - 1, position)
            position -= 1
        }
    }

    /// Adds `event` under every key it carries that a query reads it by.
    public mutating func add(_ event: VelocityEvent) {
        for key in Self.keys { add(event, under: key) }
    }

    /// Drops every event no value asked as of `time` or later can count (older than its group's
    /// longest window), and every id left without events.
    ///
    /// - Parameter slack: A group is swept only once its window has moved on by this share of
    ///   its length since its last sweep (every id is visited: sweeping a month-long window's
    ///   ids for every slice of a few hours cost more than the events it dropped); 0 sweeps
    ///   every time. Events held stay within `1 + slack` windows.
    public mutating func evict(before time: Date, slack: Double = 0) {
        let now = time.timeIntervalSince1970
        guard parts.count > 1 else {
            parts[0].evict(now: now, slack: slack)
            return
        }
        parts.withUnsafeMutableBufferPointer { parts in
            let shared = SharedParts(parts: parts)
            DispatchQueue.concurrentPerform(iterations: shared.parts.count) { part in
                shared.parts[part].evict(now: now, slack: slack)
            }
        }
    }

    /// Events held, over every group.
    public var eventCount: Int { parts.reduce(0) { $0 + $1.groups.reduce(0) { $0 + ($1?.count ?? 0) } } }

    /// Ids held (an id counts once per group it has events in).
    public var keyCount: Int { parts.reduce(0) { $0 + $1.groups.reduce(0) { $0 + ($1?.entries.count ?? 0) } } }

    /// The value of `query` for `subject` as of `time`: the events in `[time − window, time)`;
    /// nil when the subject has no id for the query's key.
    public func value(of query: VelocityQuery, subject: VelocitySubject, at time: Date) -> Int? {
        guard let text = subject.id(for: query.key) else { return nil }
        let id = ID(text)
        guard let group = parts[part(of: id)].groups[Self.index(query.metric.eventKind, query.key)],
            let entries = group.entries[id]
        else {
            return 0
        }
        let now = time.timeIntervalSince1970
        let lower = entries.firstIndex(notBefore: now - Double(query.windowSeconds), time: \.time)
        let upper = entries.firstIndex(notBefore: now, time: \.time)
        guard lower < upper else { return 0 }
        let window = entries[lower..<upper]
        switch query.metric {
        case .distinctCards: return Set(window.compactMap(\.cardID)).count
        case .distinctNames:
            return Set(window.compactMap { $0.cardholderName.map(InMemoryVelocityProvider.normalizedName) }).count
        default: return window.count
        }
    }
}

extension SlidingVelocity.Part {
    /// Adds the event at `event` under `id` to group `index` (kept by this part).
    mutating func add(_ event: UnsafePointer<VelocityEvent>, id: SlidingVelocity.ID, group index: Int) {
        let entry = SlidingVelocity.Entry(
            time: event.pointee.time.timeIntervalSince1970, cardID: groups[index]!.cards ? event.pointee.cardID : nil,
            cardholderName: groups[index]!.names ? event.pointee.cardholderName : nil)
        SlidingVelocity.insert(entry, into: &groups[index]!.entries[id, default: []])
        groups[index]!.count += 1
    }

    /// ``SlidingVelocity/evict(before:slack:)`` over this part's groups.
    mutating func evict(now: Double, slack: Double) {
        for index in groups.indices {
            guard let horizon = groups[index]?.horizon,
                now - horizon - groups[index]!.evictedThrough >= slack * horizon
            else { continue }
            // Taken out while it changes, so its arrays are not shared (and copied) on write.
            var group = groups[index]!
            groups[index] = nil
            let oldest = now - group.horizon
            group.evictedThrough = oldest
            var empty: [SlidingVelocity.ID] = []
            var position = group.entries.values.startIndex
            while position != group.entries.values.endIndex {
                if let last = group.entries.values[position].last?.time, last < oldest {
                    group.count -= group.entries.values[position].count
                    empty.append(group.entries.keys[position])
                } else if let first = group.entries.values[position].first?.time, first < oldest {
                    let keep = group.entries.values[position].firstIndex(notBefore: oldest, time: \.time)
                    group.entries.values[position].removeFirst(keep)
                    group.count -= keep
                }
                position = group.entries.values.index(after: position)
            }
            for id in empty { group.entries[id] = nil }
            groups[index] = group
        }
    }
}

extension SlidingVelocity: BacktestVelocity {}
extension InMemoryVelocityProvider: BacktestVelocity {}

/// Where a backtest counts a velocity value its attempt did not record.
public protocol BacktestVelocity: Sendable {
    /// The value of `query` for `subject` as of `time`; nil when the subject has no id for its key.
    func value(of query: VelocityQuery, subject: VelocitySubject, at time: Date) -> Int?
}
