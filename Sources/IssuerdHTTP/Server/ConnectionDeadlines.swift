import Dispatch
import Foundation
import Glibc
import IssuerdCore

/// The head and body deadlines libmicrohttpd lacks: its own timeout restarts with every byte, so
/// a client sending one byte a second holds a connection for as long as it likes.
///
/// libmicrohttpd tells the server when a connection opens and closes (`MHD_OPTION_NOTIFY_CONNECTION`),
/// when a head is complete (the access handler's first call), when the body is (its last call)
/// and when the answer has been sent (the completion callback). Between those points a thread of
/// this class looks every ``sweepInterval`` for a connection whose head or body is late and shuts
/// its socket down (`shutdown(2)`, not `close`): libmicrohttpd then reads the end of the stream
/// and closes the connection itself, on its own thread, as if the client had gone. A connection
/// whose request is being handled or answered is never touched; a stalled answer is bounded by
/// libmicrohttpd's idle timeout.
final class ConnectionDeadlines: Sendable {
    private enum Phase {
        /// Waiting for a complete request head since the connection opened or its last answer.
        case awaitingHead(since: ContinuousClock.Instant)
        /// Receiving the body of a request whose head arrived then.
        case receivingBody(since: ContinuousClock.Instant)
        /// The request is with its handler, or its answer is being sent.
        case busy
        /// Shut down here; nothing more is done for it.
        case closed
    }

    private struct Entry {
        let descriptor: Int32
        var phase: Phase
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        var nextID = 1
    }

    let headTimeout: Duration
    let bodyTimeout: Duration
    /// How often late connections are looked for: a tenth of the shorter deadline, 10 ms to 250 ms.
    let sweepInterval: Duration
    // Guarded by Lock: every open connection's descriptor and phase. A connection's entry is
    // removed under this lock by the close notification, which libmicrohttpd sends before it
    // closes the descriptor: so a descriptor shut down here still belongs to that connection.
    private let state = Lock(State())
    private let running = Lock(false)
    private let stopRequest = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let closedTotal: Counter

    init(headTimeout: Duration, bodyTimeout: Duration, metrics: MetricsRegistry) {
        self.headTimeout = headTimeout
        self.bodyTimeout = bodyTimeout
        sweepInterval = min(max(min(headTimeout, bodyTimeout) / 10, .milliseconds(10)), .milliseconds(250))
        closedTotal = metrics.counter(
            "issuerd_http_connections_closed_total",
            help: "Connections closed because a request head or body was not complete in time.", labels: ["reason"])
        metrics.gauge("issuerd_http_connections_open", help: "HTTP connections open now.") { [weak self] in
            [([], Double(self?.openCount ?? 0))]
        }
    }

    /// Connections open now.
    var openCount: Int { state.withLock { $0.entries.count } }

    /// Starts tracking a connection just accepted; returns its id (never 0).
    func opened(descriptor: Int32) -> Int {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.entries[id] = Entry(descriptor: descriptor, phase: .awaitingHead(since: .now))
            return id
        }
    }

    /// Stops tracking a connection libmicrohttpd is closing.
    func closed(_ id: Int) {
        _ = state.withLock { $0.entries.removeValue(forKey: id) }
    }

    /// The head arrived: the body's deadline starts. False when the connection was shut down here.
    func headReceived(_ id: Int) -> Bool {
        move(id, to: .receivingBody(since: .now))
    }

    /// The request goes to its handler, or an answer is queued: no deadline applies until it has
    /// been sent. False when the connection was shut down here, and nothing must be handled.
    func handling(_ id: Int) -> Bool {
        move(id, to: .busy)
    }

    /// The answer was sent: the connection may carry another request, whose head's deadline starts.
    func answered(_ id: Int) {
        _ = move(id, to: .awaitingHead(since: .now))
    }

    private func move(_ id: Int, to phase: Phase) -> Bool {
        state.withLock { state in
            guard let entry = state.entries[id] else { return true }
            if case .closed = entry.phase { return false }
            state.entries[id]?.phase = phase
            return true
        }
    }

    /// Shuts down every connection whose head or body is late at `now`; returns how many of each.
    @discardableResult
    func sweep(now: ContinuousClock.Instant = .now) -> (heads: Int, bodies: Int) {
        state.withLock { state in
            var heads = 0
            var bodies = 0
            for (id, entry) in state.entries {
                let reason: String
                switch entry.phase {
                case .awaitingHead(let since) where now - since > headTimeout:
                    heads += 1
                    reason = "head_timeout"
                case .receivingBody(let since) where now - since > bodyTimeout:
                    bodies += 1
                    reason = "body_timeout"
                default: continue
                }
                // Counted first: once the socket is shut down the client may look at the metrics.
                closedTotal.increment(labels: [reason])
                _ = Glibc.shutdown(entry.descriptor, Int32(SHUT_RDWR))
                state.entries[id]?.phase = .closed
            }
            return (heads, bodies)
        }
    }

    /// Starts the sweeping thread; call after termination signals are blocked, so it inherits the mask.
    func start() {
        guard
            running.withLock({ running in
                defer { running = true }
                return !running
            })
        else { return }
        let thread = Thread { [self] in
            while stopRequest.wait(timeout: .now() + .nanoseconds(Int(sweepInterval.nanoseconds))) == .timedOut {
                sweep()
            }
            stopped.signal()
        }
        thread.name = "issuerd-http-deadlines"
        thread.start()
    }

    /// Stops the sweeping thread and waits for it. Idempotent.
    func stop() {
        guard
            running.withLock({ running in
                defer { running = false }
                return running
            })
        else { return }
        stopRequest.signal()
        stopped.wait()
    }
}

extension Duration {
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
