import IssuerdCore
import Synchronization

/// How many backtests run at once on this instance.
///
/// A backtest replays up to 100,000 attempts on every core and reads its window on two pooled
/// connections: two or three at once would starve the provisioning requests that share the
/// cores and the pool. Past the limit a backtest is refused with 429 `backtest_busy` and
/// `Retry-After` (the console waits and retries); read-aheads (`…/backtest/prepare`) are
/// already one at a time (``BacktestPreparation``).
package final class BacktestGate: Sendable {
    package let limit: Int
    private let running = Atomic<Int>(0)

    package init(limit: Int = 1) {
        precondition(limit > 0)
        self.limit = limit
    }

    /// Takes a place; false when `limit` backtests already run. Pair a true with ``leave()``.
    package func enter() -> Bool {
        while true {
            let current = running.load(ordering: .relaxed)
            guard current < limit else { return false }
            if running.compareExchange(expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
                .exchanged
            {
                return true
            }
        }
    }

    package func leave() {
        running.subtract(1, ordering: .releasing)
    }

    /// Runs `body` in a place, or throws 429 `backtest_busy` when there is none.
    package func run<T>(_ body: () throws -> T) throws -> T {
        guard enter() else {
            throw BacktestGate.busy()
        }
        defer { leave() }
        return try body()
    }

    /// `backtest_busy`: a backtest already runs on this instance; retry in a second.
    package static func busy(file: String = #fileID, line: Int = #line) -> Refusal {
        Refusal(
            .busy(retryAfter: 1), code: "backtest_busy",
            message: "another backtest is running on this instance; retry in a moment", file: file, line: line)
    }
}
