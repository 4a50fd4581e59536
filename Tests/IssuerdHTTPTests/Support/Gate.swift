import Dispatch

/// Lets a test hold a handler inside its work and know when it got there.
final class Gate: Sendable {
    private let enteredSignal = DispatchSemaphore(value: 0)
    private let releaseSignal = DispatchSemaphore(value: 0)

    /// Called by the handler: reports arrival, then waits to be released (at most 30 s so a
    /// broken test fails instead of hanging).
    func pass() {
        enteredSignal.signal()
        _ = releaseSignal.wait(timeout: .now() + 30)
    }

    /// Waits until a handler arrived; false after 30 s.
    func waitUntilEntered() -> Bool {
        enteredSignal.wait(timeout: .now() + 30) == .success
    }

    /// Lets one waiting handler continue.
    func release() {
        releaseSignal.signal()
    }
}
