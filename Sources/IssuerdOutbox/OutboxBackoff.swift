import IssuerdCore

/// When a failed message is tried again: exponential backoff with jitter, and when it is
/// dead-lettered instead.
///
/// The delay after try `n` is drawn uniformly from `[d/2, d]` with `d = min(max, base · 2^(n-1))`
/// ("equal jitter"): retries of many messages failing together spread out instead of hitting a
/// recovering receiver in lock-step, and no retry comes sooner than half the nominal delay.
package struct OutboxBackoff: Sendable {
    package var base: Duration
    package var maximum: Duration
    package var maxAttempts: Int

    /// Creates the value from every stored property.
    package init(base: Duration, maximum: Duration, maxAttempts: Int) {
        self.base = base
        self.maximum = maximum
        self.maxAttempts = maxAttempts
    }

    /// What to do after the `attempt`-th try (1-based) failed.
    package enum Decision: Equatable, Sendable {
        /// Try again after this many seconds.
        case retry(after: Double)
        /// Give up: the message becomes a dead letter.
        case deadLetter
    }

    /// The decision after try `attempt` failed; `unit` is a uniform draw from `0..<1` (injected
    /// so tests can pin it).
    package func decision(afterAttempt attempt: Int, unit: Double = Double.random(in: 0..<1)) -> Decision {
        guard attempt < maxAttempts else { return .deadLetter }
        let baseSeconds = base.timeInterval
        let maxSeconds = maximum.timeInterval
        // Capped before exponentiating, so a large attempt count cannot overflow.
        let exponent = Double(min(max(attempt - 1, 0), 62))
        let nominal = min(maxSeconds, baseSeconds * pow2(exponent))
        return .retry(after: nominal / 2 + nominal / 2 * min(max(unit, 0), 1))
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        var remaining = Int(exponent)
        while remaining > 0 && value < 1e12 {
            value *= 2
            remaining -= 1
        }
        return value
    }
}
