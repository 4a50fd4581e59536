import Synchronization

/// Holds the process's metrics and renders them in the Prometheus text exposition format 0.0.4.
///
/// Metric families are registered once at start-up; recording is a dictionary update under a
/// `Mutex`, cheap next to a request. Gauges that mirror another component's state (pool
/// in-use/idle, outbox backlog) are registered as closures read at scrape time.
public final class MetricsRegistry: Sendable {
    // Guarded by Mutex: every family's samples live in this one state value.
    private let state = Mutex(State())

    private struct State {
        var order: [String] = []
        var families: [String: Family] = [:]
    }

    private enum Kind: String { case counter, gauge, histogram }

    private struct Family {
        var name: String
        var help: String
        var kind: Kind
        var labelNames: [String]
        var buckets: [Double] = []
        var values: [[String]: Double] = [:]
        var histograms: [[String]: HistogramSample] = [:]
        var reader: (@Sendable () -> [([String], Double)])?
    }

    private struct HistogramSample {
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0

        /// Counts `value` in every bucket whose upper bound it does not exceed.
        mutating func record(_ value: Double, buckets: [Double]) {
            for (index, bound) in buckets.enumerated() where value <= bound { counts[index] += 1 }
            sum += value
            count += 1
        }
    }

    public init() {}

    /// Registers a counter family. Registering the same name again returns the same family.
    public func counter(_ name: String, help: String, labels: [String] = []) -> Counter {
        register(Family(name: name, help: help, kind: .counter, labelNames: labels))
        return Counter(registry: self, name: name)
    }

    /// Registers a gauge family set explicitly with ``Gauge/set(_:labels:)``.
    public func gauge(_ name: String, help: String, labels: [String] = []) -> Gauge {
        register(Family(name: name, help: help, kind: .gauge, labelNames: labels))
        return Gauge(registry: self, name: name)
    }

    /// Registers a gauge family whose samples are read from `read` at every scrape.
    ///
    /// - Parameter read: Returns `(label values, value)` pairs; it must not block for long.
    public func gauge(_ name: String, help: String, labels: [String] = [], read: @escaping @Sendable () -> [([String], Double)]) {
        var family = Family(name: name, help: help, kind: .gauge, labelNames: labels)
        family.reader = read
        register(family)
    }

    /// Registers a histogram family with ascending upper bounds (`+Inf` is implicit).
    public func histogram(_ name: String, help: String, labels: [String] = [], buckets: [Double]) -> Histogram {
        var family = Family(name: name, help: help, kind: .histogram, labelNames: labels)
        family.buckets = buckets.sorted()
        register(family)
        return Histogram(registry: self, name: name)
    }

    private func register(_ family: Family) {
        state.withLock { state in
            if state.families[family.name] == nil { state.order.append(family.name) }
            if let existing = state.families[family.name], existing.kind == family.kind, family.reader == nil { return }
            state.families[family.name] = family
        }
    }

    fileprivate func add(_ name: String, labels: [String], value: Double, replace: Bool) {
        // Mutated in place: copying the family out and back would copy its whole sample
        // dictionary on every increment (copy-on-write with two references).
        state.withLock { state in
            if replace {
                state.families[name]?.values[labels] = value
            } else {
                state.families[name]?.values[labels, default: 0] += value
            }
        }
    }

    fileprivate func observe(_ name: String, labels: [String], value: Double) {
        state.withLock { state in
            guard let buckets = state.families[name]?.buckets else { return }
            state.families[name]?.histograms[labels, default: HistogramSample(counts: Array(repeating: 0, count: buckets.count))]
                .record(value, buckets: buckets)
        }
    }

    /// The current value of a counter or explicitly set gauge sample, for tests and summaries.
    public func value(of name: String, labels: [String] = []) -> Double? {
        state.withLock { $0.families[name]?.values[labels] }
    }

    /// Renders every family in registration order.
    public func render() -> String {
        let (order, families) = state.withLock { ($0.order, $0.families) }
        var out = ""
        for name in order {
            guard let family = families[name] else { continue }
            out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n"
            switch family.kind {
            case .counter, .gauge:
                let samples = family.reader?() ?? family.values.map { ($0.key, $0.value) }
                for (labels, value) in samples.sorted(by: { $0.0.lexicographicallyPrecedes($1.0) }) {
                    out += name + Self.labelText(family.labelNames, labels) + " " + Self.number(value) + "\n"
                }
            case .histogram:
                for (labels, sample) in family.histograms.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                    for (index, bound) in family.buckets.enumerated() {
                        out += name + "_bucket" + Self.labelText(family.labelNames + ["le"], labels + [Self.number(bound)])
                            + " \(sample.counts[index])\n"
                    }
                    out += name + "_bucket" + Self.labelText(family.labelNames + ["le"], labels + ["+Inf"]) + " \(sample.count)\n"
                    out += name + "_sum" + Self.labelText(family.labelNames, labels) + " " + Self.number(sample.sum) + "\n"
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
    let registry: MetricsRegistry
    let name: String

    /// Adds `amount` to the sample with these label values (in registration order).
    public func increment(by amount: Double = 1, labels: [String] = []) {
        registry.add(name, labels: labels, value: amount, replace: false)
    }
}

/// A value that goes up and down.
public struct Gauge: Sendable {
    let registry: MetricsRegistry
    let name: String

    /// Sets the sample with these label values.
    public func set(_ value: Double, labels: [String] = []) {
        registry.add(name, labels: labels, value: value, replace: true)
    }
}

/// A distribution of observations in cumulative buckets, e.g. request latency in seconds.
public struct Histogram: Sendable {
    let registry: MetricsRegistry
    let name: String

    /// The default latency buckets in seconds, from 1 ms to 10 s.
    public static let latencyBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// Records one observation.
    public func observe(_ value: Double, labels: [String] = []) {
        registry.observe(name, labels: labels, value: value)
    }
}
