import CMicroHTTPD
import Dispatch
import Foundation
import IssuerdCore

/// The threads that run route handlers, off libmicrohttpd's network threads.
///
/// A handler may block (on the database, for up to its deadline); while it does, its
/// connection is suspended (`MHD_suspend_connection`) and the network thread goes on serving
/// every other connection, so an inline route (`/healthz`) is answered even when every handler
/// thread waits. Jobs run in arrival order; the queue is bounded by the connections
/// libmicrohttpd accepts.
final class HandlerThreads: Sendable {
    private struct Jobs {
        var items: [@Sendable () -> Void] = []
        var head = 0
        var stopped = false

        mutating func next() -> (@Sendable () -> Void)? {
            guard !stopped, head < items.count else { return nil }
            let job = items[head]
            head += 1
            if head > 64, head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    let count: Int
    // Guarded by Lock: the queue; `available` counts the jobs (and the wake-ups of stop()).
    private let jobs = Lock(Jobs())
    private let available = DispatchSemaphore(value: 0)

    init(count: Int) {
        self.count = max(1, count)
    }

    /// Starts the threads; they inherit the caller's signal mask.
    func start() {
        for index in 0..<count {
            let thread = Thread { [self] in
                while true {
                    available.wait()
                    guard let job = jobs.withLock({ $0.next() }) else {
                        if jobs.withLock({ $0.stopped }) { return }
                        continue
                    }
                    job()
                }
            }
            thread.name = "issuerd-http-handler-\(index)"
            thread.start()
        }
    }

    /// Queues `job` for the next free thread.
    func submit(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.items.append(job) }
        available.signal()
    }

    /// Lets every thread end once it is idle; queued jobs are dropped (their requests were
    /// abandoned by the server's shutdown), running ones finish on their own.
    func stop() {
        jobs.withLock { $0.stopped = true }
        for _ in 0..<count { available.signal() }
    }
}

/// One request whose handler runs on a ``HandlerThreads`` thread while libmicrohttpd holds its
/// connection suspended; the answer comes back through here and the connection is resumed.
///
/// Whoever settles it first wins: the handler with its answer, or the server's shutdown, which
/// abandons what is still running so that no connection stays suspended when the daemon stops.
final class Handoff: @unchecked Sendable {
    // @unchecked Sendable: `connection` is used only under `stage`'s lock and only while the
    // handoff is unsettled, which ends before the daemon stops (see ServerContext.abandonHandoffs).
    private let connection: OpaquePointer

    enum Outcome {
        case answered(HTTPResponse, route: String?)
        /// The server is stopping: the connection is closed without an answer.
        case abandoned
    }

    private enum Stage {
        case running
        case settled(Outcome)
        case taken
    }

    private let stage = Lock(Stage.running)

    init(connection: OpaquePointer) {
        self.connection = connection
    }

    /// Records `outcome` and resumes the connection, unless the handoff was settled already.
    func settle(_ outcome: Outcome) {
        stage.withLock { stage in
            guard case .running = stage else { return }
            stage = .settled(outcome)
            MHD_resume_connection(connection)
        }
    }

    /// The outcome once settled, handed out once (on the connection's network thread, after
    /// the resume); nil while the handler still runs.
    func take() -> Outcome? {
        stage.withLock { stage in
            guard case .settled(let outcome) = stage else { return nil }
            stage = .taken
            return outcome
        }
    }
}
