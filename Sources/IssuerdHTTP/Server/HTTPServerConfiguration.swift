import Foundation

/// How the HTTP server listens and how much it accepts.
public struct HTTPServerConfiguration: Sendable {
    /// Where to listen.
    public var listen: ListenAddress
    /// Handler threads. Handlers block on the database, so the executable sizes this to the
    /// connection pool; more threads than connections only queue on the pool.
    public var threadCount: Int
    /// libmicrohttpd's network threads, which read requests, check their heads, answer inline
    /// routes and write answers, and never block; nil for ``defaultNetworkThreadCount(processors:)``.
    /// Each sleeps in `epoll_wait` between events: the fewer they are, the more events each
    /// wake-up serves under load.
    public var networkThreadCount: Int?
    /// The largest request body accepted; larger ones get 413 before or while they are read.
    public var bodyLimit: Int
    /// Connection counts, memory per connection and the deadlines for slow clients.
    public var limits: HTTPServerLimits

    /// Seconds of inactivity after which a connection is closed (``HTTPServerLimits/idleTimeout``).
    public var connectionTimeout: Int {
        get { limits.idleTimeout }
        set { limits.idleTimeout = newValue }
    }

    /// The network threads in use: ``networkThreadCount``, or one per four processors (at least
    /// one), never more than the handler threads.
    public var effectiveNetworkThreadCount: Int {
        min(threadCount, networkThreadCount ?? Self.defaultNetworkThreadCount())
    }

    /// One network thread per four processors, at least one. On two cores one thread took 0.35 ms
    /// of issuerd's CPU per in-app request where one per handler thread took 0.39 ms: fewer
    /// wake-ups, each serving more connections (docs/performance.md).
    public static func defaultNetworkThreadCount(
        processors: Int = ProcessInfo.processInfo.activeProcessorCount
    ) -> Int {
        max(1, processors / 4)
    }

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - listen: Where to listen; loopback port 8080 by default.
    ///   - threadCount: Handler threads; twice the processor count by default.
    ///   - networkThreadCount: libmicrohttpd's threads; nil for one per four processors.
    ///   - bodyLimit: Bytes; 1 MiB by default.
    ///   - limits: Connection limits and deadlines; ``HTTPServerLimits``' defaults unless given.
    ///   - connectionTimeout: Idle seconds, replacing `limits.idleTimeout` when given.
    public init(
        listen: ListenAddress = .default,
        threadCount: Int = 2 * ProcessInfo.processInfo.activeProcessorCount,
        networkThreadCount: Int? = nil,
        bodyLimit: Int = 1 << 20,
        limits: HTTPServerLimits = HTTPServerLimits(),
        connectionTimeout: Int? = nil
    ) {
        self.listen = listen
        self.threadCount = threadCount
        self.networkThreadCount = networkThreadCount
        self.bodyLimit = bodyLimit
        self.limits = limits
        if let connectionTimeout { self.limits.idleTimeout = connectionTimeout }
    }

    /// Checks ranges before any socket is opened.
    ///
    /// - Throws: ``HTTPServerError`` `invalid_configuration` naming the bad value.
    public func validate() throws {
        guard (1...1024).contains(threadCount) else {
            throw HTTPServerError(.invalidConfiguration, "threadCount must be 1...1024, got \(threadCount)")
        }
        if let networkThreadCount, !(1...threadCount).contains(networkThreadCount) {
            throw HTTPServerError(
                .invalidConfiguration,
                "networkThreadCount must be 1...\(threadCount) (the handler threads), got \(networkThreadCount)")
        }
        guard (0...(1 << 30)).contains(bodyLimit) else {
            throw HTTPServerError(.invalidConfiguration, "bodyLimit must be 0...1 GiB, got \(bodyLimit)")
        }
        try limits.validate(threadCount: threadCount)
    }
}
