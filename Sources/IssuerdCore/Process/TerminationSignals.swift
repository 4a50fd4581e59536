import Glibc

/// Turns SIGINT, SIGTERM and SIGHUP from asynchronous interruptions into a value the main
/// thread waits for.
///
/// POSIX delivers a process-directed signal to any one thread that does not block it. If the
/// HTTP and database worker threads could receive SIGTERM, its handler would run in the middle
/// of a request, where almost nothing is async-signal-safe. So the main thread blocks these
/// signals *before* starting any other thread (new threads inherit the mask, pthread_sigmask(3)),
/// then calls ``wait()``, which takes them synchronously with `sigwait(3)`: a plain return
/// value, after which shutdown (or, for SIGHUP, a rule reload) runs as ordinary code.
public struct TerminationSignals: Sendable {
    /// A signal this type waits for.
    public enum Signal: Int32, Sendable, CaseIterable, CustomStringConvertible {
        /// Ctrl-C in a terminal: shut down.
        case interrupt = 2  // SIGINT
        /// The service manager's stop: shut down.
        case terminate = 15  // SIGTERM
        /// The operator's reload request: re-read the rules, keep running.
        case hangup = 1  // SIGHUP

        /// The conventional name, e.g. `SIGTERM`.
        public var description: String {
            switch self {
            case .interrupt: "SIGINT"
            case .terminate: "SIGTERM"
            case .hangup: "SIGHUP"
            }
        }
    }

    private let set: sigset_t

    /// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread.
    ///
    /// Call it first thing on the main thread, before any thread is created (libmicrohttpd's,
    /// the database pool's, Foundation's), or those threads may take the signals instead.
    ///
    /// - Returns: A value whose ``wait()`` receives the blocked signals.
    /// - Throws: ``SignalError`` if the mask cannot be changed.
    public static func block() throws -> TerminationSignals {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in Signal.allCases { sigaddset(&set, signal.rawValue) }
        let result = pthread_sigmask(SIG_BLOCK, &set, nil)
        guard result == 0 else { throw SignalError(call: "pthread_sigmask", code: result) }
        return TerminationSignals(set: set)
    }

    /// Waits until one of the blocked signals is pending and consumes it.
    ///
    /// - Returns: Which signal arrived.
    public func wait() -> Signal {
        var set = self.set
        while true {
            var number: Int32 = 0
            // sigwait returns only for signals in the set, so any failure (there are none for a
            // valid set) or unknown number simply waits again.
            if sigwait(&set, &number) == 0, let signal = Signal(rawValue: number) { return signal }
        }
    }
}

/// A signal mask could not be changed.
public struct SignalError: Error, Sendable, CustomStringConvertible {
    /// The failing call.
    public var call: String
    /// Its error number.
    public var code: Int32

    /// Creates an error.
    public init(call: String, code: Int32) {
        self.call = call
        self.code = code
    }

    /// The call and its error text.
    public var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
}
