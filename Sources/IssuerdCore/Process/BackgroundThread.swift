import Foundation

/// One long-lived background thread with a cooperative stop, shared by the instance's
/// background workers (``OutboxDispatcher``, ``AuditSealer``, the recent hours' rounds of
/// ``BacktestPreparation``).
///
/// The worker's loop asks ``stopRequested`` between rounds, sleeps with ``sleep(seconds:)``
/// (woken early by a stop) and ends by returning; ``stop(timeout:)`` then waits for it.
package final class BackgroundThread: Sendable {
    private let name: String
    // Guarded by Lock: the run flag, the stop request and whether the thread has finished.
    private let state = Lock(State())
    // NSCondition is thread-safe; it wakes a sleeping loop early on stop.
    private let condition = NSCondition()

    private struct State {
        var running = false
        var stopRequested = false
        var finished = false
    }

    /// - Parameter name: The thread's name (seen in `top -H`, debuggers and crash reports).
    package init(name: String) {
        self.name = name
    }

    /// Runs `body` on a new thread, once; false when it was started already, or stopped.
    @discardableResult
    package func start(_ body: @escaping @Sendable () -> Void) -> Bool {
        let shouldStart = state.withLock { state -> Bool in
            guard !state.running, !state.stopRequested else { return false }
            state.running = true
            return true
        }
        guard shouldStart else { return false }
        let thread = Thread { [self] in
            body()
            condition.lock()
            state.withLock { $0.finished = true }
            condition.broadcast()
            condition.unlock()
        }
        thread.name = name
        thread.start()
        return true
    }

    /// Runs `round` now on the caller's thread, then on the background thread every `interval`
    /// until a stop is requested (the periodic housekeeping of ``AttemptPartitionKeeper`` and
    /// ``IdempotencyPruner``); false when the thread was started already, or stopped.
    @discardableResult
    package func startRounds(every interval: TimeInterval, _ round: @escaping @Sendable () -> Void) -> Bool {
        round()
        return start { [self] in
            while true {
                sleep(seconds: interval)
                if stopRequested { break }
                round()
            }
        }
    }

    /// Whether ``stop(timeout:)`` has been called.
    package var stopRequested: Bool { state.withLock { $0.stopRequested } }

    /// Sleeps up to `seconds`, returning early when a stop is requested.
    package func sleep(seconds: TimeInterval) {
        condition.lock()
        let deadline = Date().addingTimeInterval(seconds)
        while !stopRequested && condition.wait(until: deadline) {}
        condition.unlock()
    }

    /// Asks the loop to stop and waits for its thread, at most `timeout`.
    ///
    /// - Returns: False when the thread was still running at the deadline (never started: true,
    ///   and it never starts afterwards).
    package func stop(timeout: Duration) -> Bool {
        let running = state.withLock { state -> Bool in
            if !state.running { state.stopRequested = true }
            return state.running
        }
        guard running else { return true }
        condition.lock()
        state.withLock { $0.stopRequested = true }
        condition.broadcast()
        let deadline = Date().addingTimeInterval(timeout.timeInterval)
        while !state.withLock({ $0.finished }) && condition.wait(until: deadline) {}
        condition.unlock()
        return state.withLock { $0.finished }
    }
}
