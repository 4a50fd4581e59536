import Glibc
import IssuerdCore

/// The HTTP/1.1 server: libmicrohttpd accepting on a socket this class binds, answering
/// through a ``Router``.
///
/// libmicrohttpd's network threads read requests and write answers; route handlers run on
/// handler threads of their own (a blocking database call occupies one, so their count is sized
/// to the database pool) while the request's connection waits suspended, and inline routes
/// (`/healthz`) are answered on the network thread, even while every handler waits. Every
/// request gets an `X-Request-Id`, a JSON access-log line at info, and samples in
/// `issuerd_http_requests_total` and `issuerd_http_request_duration_seconds`.
public final class HTTPServer: Sendable {
    private enum Phase {
        case created
        case running(daemon: MicroHTTPDaemon, socket: ListeningSocket)
        case stopping
        case stopped
    }

    private let configuration: HTTPServerConfiguration
    private let context: ServerContext
    // Guarded by Lock: the lifecycle phase, which owns the daemon and the socket while running.
    private let phase = Lock(Phase.created)
    private let boundPort = Lock(0)

    /// Creates a server; nothing listens until ``start()``.
    ///
    /// - Parameters:
    ///   - configuration: Address, threads, body limit and timeout.
    ///   - router: The routes; copied, so later changes to the caller's router do not apply.
    ///   - logger: Receives access-log lines (info) and server diagnostics.
    ///   - metrics: Where the request counter and latency histogram are registered.
    public init(configuration: HTTPServerConfiguration, router: Router, logger: Logger, metrics: MetricsRegistry) {
        self.configuration = configuration
        self.context = ServerContext(
            router: router, logger: logger, metrics: metrics, bodyLimit: configuration.bodyLimit,
            handlerThreads: configuration.threadCount, limits: configuration.limits)
    }

    /// The port actually bound (the kernel's pick for port 0), or the configured one before start.
    public var port: Int {
        boundPort.withLock { $0 == 0 ? Int(configuration.listen.port) : $0 }
    }

    /// Binds the socket and starts libmicrohttpd's threads.
    ///
    /// Call it after blocking termination signals (``TerminationSignals``) so the worker
    /// threads inherit the mask and signals reach only the thread that waits for them.
    ///
    /// - Throws: ``HTTPServerError``: `invalid_configuration` (also when the process may not open
    ///   a descriptor for every connection allowed), `socket_failed` (e.g. the port is taken),
    ///   `daemon_failed`, or `invalid_state` when started twice or after shutdown.
    public func start() throws {
        try configuration.validate()
        try DescriptorLimit.ensure(room: configuration.limits.maxConnections + DescriptorLimit.reserve)
        try phase.withLock { phase in
            guard case .created = phase else {
                throw HTTPServerError(.invalidState, "the HTTP server can be started only once")
            }
            let socket = try ListeningSocket(address: configuration.listen)
            let daemon = try MicroHTTPDaemon(socket: socket, configuration: configuration, context: context)
            context.handlers.start()
            boundPort.withLock { $0 = socket.port }
            phase = .running(daemon: daemon, socket: socket)
        }
        context.deadlines.start()
        context.logger.notice(
            "http server listening",
            [
                "address": .string(
                    ListenAddress(
                        host: configuration.listen.host, port: UInt16(port), family: configuration.listen.family
                    ).description),
                "threads": .int(configuration.threadCount),
                "networkThreads": .int(configuration.effectiveNetworkThreadCount),
                "maxConnections": .int(configuration.limits.maxConnections),
                "maxConnectionsPerAddress": .int(configuration.limits.maxConnectionsPerAddress),
            ])
    }

    /// Stops gracefully: refuses new connections at once, lets requests in flight finish for
    /// up to `timeout`, then stops the threads and closes every connection and the socket.
    ///
    /// Idempotent; a call while another is in progress returns at once.
    ///
    /// - Parameter timeout: How long in-flight requests may take to finish.
    public func shutdown(timeout: Duration = .seconds(5)) {
        let running: (daemon: MicroHTTPDaemon, socket: ListeningSocket)? = phase.withLock { phase in
            switch phase {
            case .running(let daemon, let socket):
                phase = .stopping
                return (daemon, socket)
            case .created:
                phase = .stopped
                return nil
            case .stopping, .stopped:
                return nil
            }
        }
        guard let running else { return }
        running.daemon.quiesce()
        running.socket.stopListening()
        let deadline = ContinuousClock.now + timeout
        while context.inFlight > 0, ContinuousClock.now < deadline {
            // A short poll: shutdown happens once per process, and a condition variable fed
            // from every request completion would cost all requests for this one wait.
            usleep(5_000)
        }
        var abandoned = context.inFlight
        // A connection still waiting for its handler is closed without an answer (as stopping
        // the daemon closes the others); the daemon must not stop with one suspended.
        if context.abandonHandoffs() > 0 {
            let closing = ContinuousClock.now + .seconds(1)
            while context.inFlight > 0, ContinuousClock.now < closing { usleep(5_000) }
            abandoned = max(abandoned, context.inFlight)
        }
        context.deadlines.stop()
        running.daemon.stop()
        context.handlers.stop()
        // The phase held the last references: the socket closes here, after the daemon stopped.
        phase.withLock { $0 = .stopped }
        context.logger.notice("http server stopped", ["abandonedRequests": .int(abandoned)])
    }

    deinit {
        shutdown(timeout: .zero)
    }
}
