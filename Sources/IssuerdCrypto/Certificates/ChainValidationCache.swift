import Foundation
import IssuerdCore

/// A bounded cache of validated chains keyed by SHA-256 of the certificate bytes.
///
/// An entry is served only inside the time window in which a fresh verification would give the
/// same answer: from the latest notBefore to the earliest notAfter of the chain (with validity
/// checking off: up to the leaf's notAfter). Signatures, names and key checks do not depend on
/// time, so a hit is exactly equivalent to re-verifying. Only successes are cached, so a flood
/// of bad chains cannot evict good ones faster than new good chains arrive.
final class ChainValidationCache: Sendable {
    struct Entry {
        let chain: ValidatedAppleChain
        let validFrom: Date
        let validUntil: Date
        let sequence: UInt64
    }

    private struct State {
        var entries: [[UInt8]: Entry] = [:]
        var nextSequence: UInt64 = 0
    }

    /// The most entries kept; Apple reuses one leaf for months, so a handful is the real need.
    let capacity: Int
    private let state = Lock(State())

    init(capacity: Int) { self.capacity = max(0, capacity) }

    /// The cached chain for `key` if it may be served at `time`.
    func lookup(_ key: [UInt8], at time: Date) -> ValidatedAppleChain? {
        entry(key, at: time)?.chain
    }

    /// The cached entry for `key` if it may be served at `time`, with its window.
    func entry(_ key: [UInt8], at time: Date) -> Entry? {
        state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            guard entry.validFrom <= time, time <= entry.validUntil else { return nil }
            return entry
        }
    }

    /// Stores a freshly validated chain, evicting expired entries first and then the oldest.
    func insert(_ key: [UInt8], chain: ValidatedAppleChain, validFrom: Date, validUntil: Date, now: Date) {
        guard capacity > 0 else { return }
        state.withLock { state in
            if state.entries[key] == nil, state.entries.count >= capacity {
                state.entries = state.entries.filter { $0.value.validUntil >= now }
                if state.entries.count >= capacity,
                    let oldest = state.entries.min(by: { $0.value.sequence < $1.value.sequence })
                {
                    state.entries[oldest.key] = nil
                }
            }
            state.nextSequence &+= 1
            state.entries[key] = Entry(
                chain: chain, validFrom: validFrom, validUntil: validUntil, sequence: state.nextSequence)
        }
    }

    /// The number of entries, for metrics and tests.
    var count: Int { state.withLock { $0.entries.count } }
}
