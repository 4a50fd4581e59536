import Glibc
import Synchronization

/// Holds the process's metrics and renders them in the Prometheus text exposition format 0.0.4.
///
/// Metric families are registered once at start-up and handed out as handles that point at the
/// family itself, so recording looks nothing up by name. A counter's or histogram's samples are
/// kept in several shards, each under its own `Lock`, and a thread records into the shard its
/// identity picks: server threads recording the same sample at once (every request counts its
/// route and decision) would otherwise queue on one lock, which the provisioning profile showed
/// as futex sleeps and context switches. A scrape adds the shards up. Gauges set explicitly keep
/// one shard (the last value set wins); gauges that mirror another component's state (pool
/// in-use/idle, outbox backlog) are closures read at scrape time.
public final class MetricsRegistry: Sendable {
    // Guarded by Lock: which families exist, in registration order.
    private let state = Lock(State())

    private struct State {
        var order: [String] = []
        var families: [String: Family] = [:]
    }

    fileprivate enum Kind: String { case counter, gauge, histogram }

    /// Shards per counter or histogram family: more than the cores of a typical host, few
    /// enough that a scrape's merge stays trivial.
    private static let shardCount = 16

    fileprivate final class Family: Sendable {
        let name: String
        let help: String
        let kind: Kind
        let labelNames: [String]
        let buckets: [Double]
        let reader: (@Sendable () -> [([String], Double)])?
        let shards: [Shard]

        init(
            name: String, help: String, kind: Kind, labelNames: [String], buckets: [Double] = [],
            reader: (@Sendable () -> [([String], Double)])? = nil
        ) {
            self.name = name
            self.help = help
            self.kind = kind
            self.labelNames = labelNames
            self.buckets = buckets
            self.reader = reader
            // A gauge's `set` must land where the previous one did.
            let count = kind == .gauge ? 1 : MetricsRegistry.shardCount
            shards = (0..<count).map { _ in Shard() }
        }

        /// The calling thread's shard.
        var shard: Shard {
            guard shards.count > 1 else { return shards[0] }
            // pthread_t is the thread's address: mix it so neighbouring stacks spread out.
            let mixed = UInt64(UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))) &* 0x9E37_79B9_7F4A_7C15
            return shards[Int(truncatingIfNeeded: mixed >> 60) % shards.count]
        }

        /// Every shard's samples added up.
        func merged() -> Samples {
            var total = Samples()
            for shard in shards {
                shard.samples.withLock { samples in
                    total.values.merge(samples.values, uniquingKeysWith: +)
                    total.histograms.merge(samples.histograms) { $0.adding($1) }
                }
            }
            return total
        }
    }

    fileprivate final class Shard: Sendable {
        let samples = Lock(Samples())
    }

    fileprivate struct Samples {
        var values: [[String]: Double] = [:]
        var histograms: [[String]: HistogramSample] = [:]
    }

    fileprivate struct HistogramSample {
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0

        /// Counts `value` in every bucket whose upper bound it does not exceed.
        mutating func record(_ value: Double, buckets: [Double]) {
            for (index, bound) in buckets.enumerated() where value <= bound { counts[index] += 1 }
            sum += value
            count += 1
        }

        func adding(_ other: HistogramSample) -> HistogramSample {
            HistogramSample(counts: zip(counts, other.counts).map(+), sum: sum + other.sum, count: count + other.count)
        }
    }

    public init() {}

    /// Registers a counter family. Registering the same name again returns the same family.
    public func counter(_ name: String, help: String, labels: [String] = []) -> Counter {
        Counter(family: register(Family(name: name, help: help, kind: .counter, labelNames: labels)))
    }

    /// Registers a gauge family set explicitly with ``Gauge/set(_:labels:)``.
    public func gauge(_ name: String, help: String, labels: [String] = []) -> Gauge {
        Gauge(family: register(Family(name: name, help: help, kind: .gauge, labelNames: labels)))
    }

    /// Registers a gauge family whose samples are read from `read` at every scrape.
    ///
    /// - Parameter read: Returns `(label values, value)` pairs; it must not block for long.
    public func gauge(
        _ name: String, help: String, labels: [String] = [], read: @escaping @Sendable () -> [([String], Double)]
    ) {
        register(Family(name: name, help: help, kind: .gauge, labelNames: labels, reader: read))
    }

    /// Registers a histogram family with ascending upper bounds (`+Inf` is implicit).
    public func histogram(_ name: String, help: String, labels: [String] = [], buckets: [Double]) -> Histogram {
        Histogram(
            family: register(
                Family(name: name, help: help, kind: .histogram, labelNames: labels, buckets: buckets.sorted())))
    }

    /// The registered family: an existing one of the same kind is kept (its samples with it),
    /// unless `family` reads its samples from a closure, which replaces it.
    @discardableResult
    private func register(_ family: Family) -> Family {
        state.withLock { state in
            if state.families[family.name] == nil { state.order.append(family.name) }
            if let existing = state.families[family.name], existing.kind == family.kind, family.reader == nil {
                return existing
            }
            state.families[family.name] = family
            return family
        }
    }

    /// The current value of a counter or explicitly set gauge sample, for tests and summaries.
    public func value(of name: String, labels: [String] = []) -> Double? {
        state.withLock { $0.families[name] }?.merged().values[labels]
    }

    /// Renders every family in registration order.
    public func render() -> String {
        let families = state.withLock { state in state.order.compactMap { state.families[$0] } }
        var out = ""
        for family in families {
            let name = family.name
            out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n"
            switch family.kind {
            case .counter, .gauge:
                let samples = family.reader?() ?? family.merged().values.map { ($0.key, $0.value) }
                for (labels, value) in samples.sorted(by: { $0.0.lexicographicallyPrecedes($1.0) }) {
                    out += name + Self.labelText(family.labelNames, labels) + " " + Self.number(value) + "\n"
                }
            case .histogram:
                for (labels, sample) in family.merged().histograms.sorted(by: {
                    $0.key.lexicographicallyPrecedes($1.key)
                }) {
                    for (index, bound) in family.buckets.enumerated() {
                        out +=
                            name + "_bucket" + Self.labelText(family.labelNames + ["le"], labels + [Self.number(bound)])
                            + " \(sample.counts[index])\n"
                    }
                    out +=
                        name + "_bucket" + Self.labelText(family.labelNames + ["le"], labels + ["+Inf"])
                        + " \(sample.count)\n"
                    out +=
                        name + "_sum" + Self.labelText(family.labelNames, labels) + " " + Self.number(sample.sum) + "\n"
                    out += name + "_count" + Self.labelText(family.labelNames, labels) + " \(sample.count)\n"
                }
            }
        }
        return out
    }

    private static func labelText(_ names: [String], _ values: [String]) -> String {
        guard !names.isEmpty else { return "" }
        let pairs = zip(names, values).map { name, value in
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
            return "\(name)=\"\(escaped)\""
        }
        return "{" + pairs.joined(separator: ",") + "}"
    }

    private static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

/// A monotonically increasing count, e.g. requests by route and status.
public struct Counter: Sendable {
    fileprivate let family: MetricsRegistry.Family

    /// Adds `amount` to the sample with these label values (in registration order).
    public func increment(by amount: Double = 1, labels: [String] = []) {
        family.shard.samples.withLock { $0.values[labels, default: 0] += amount }
    }

    /// Makes the sample with these label values exist at 0 (if it does not yet), so that it is
    /// scraped before its first increment.
    public func initialize(labels: [String] = []) {
        family.shards[0].samples.withLock { $0.values[labels, default: 0] += 0 }
    }
}

/// A value that goes up and down.
public struct Gauge: Sendable {
    fileprivate let family: MetricsRegistry.Family

    /// Sets the sample with these label values.
    public func set(_ value: Double, labels: [String] = []) {
        family.shard.samples.withLock { $0.values[labels] = value }
    }
}

/// A distribution of observations in cumulative buckets, e.g. request latency in seconds.
public struct Histogram: Sendable {
    fileprivate let family: MetricsRegistry.Family

    /// The default latency buckets in seconds, from 1 ms to 10 s.
    public static let latencyBuckets: [Double] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    /// Makes the distribution with these label values exist, every bucket at 0, so that it is
    /// scraped before its first observation.
    public func initialize(labels: [String] = []) {
        let buckets = family.buckets
        family.shards[0].samples.withLock { samples in
            if samples.histograms[labels] == nil {
                samples.histograms[labels] = MetricsRegistry.HistogramSample(
                    counts: Array(repeating: 0, count: buckets.count))
            }
        }
    }

    /// Records one observation.
    public func observe(_ value: Double, labels: [String] = []) {
        let buckets = family.buckets
        family.shard.samples.withLock { samples in
            samples.histograms[
                labels, default: MetricsRegistry.HistogramSample(counts: Array(repeating: 0, count: buckets.count))
            ].record(value, buckets: buckets)
        }
    }
}
