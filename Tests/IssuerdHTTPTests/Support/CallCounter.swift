import IssuerdCore

/// Counts a handler's calls, so a test can tell that a refused request never reached it.
final class CallCounter: Sendable {
    private let calls = Lock(0)

    /// Called by the handler.
    func count() { calls.withLock { $0 += 1 } }

    /// How many times the handler ran.
    var value: Int { calls.withLock { $0 } }
}
