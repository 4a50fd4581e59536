import Foundation

/// How the HTTP server listens and how much it accepts.
public struct HTTPServerConfiguration: Sendable {
    /// Where to listen.
    public var listen: ListenAddress
    /// Handler threads, and as many libmicrohttpd network threads. Handlers block on the
    /// database, so the executable sizes this to the connection pool; more threads than
    /// connections only queue on the pool.
    public var threadCount: Int
    /// The largest request body accepted; larger ones get 413 before or while they are read.
    public var bodyLimit: Int
    /// Connection counts, memory per connection and the deadlines for slow clients.
    public var limits: HTTPServerLimits

    /// Seconds of inactivity after which a connection is closed (``HTTPServerLimits/idleTimeout``).
    public var connectionTimeout: Int {
        get { limits.idleTimeout }
        set { limits.idleTimeout = newValue }
    }

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - listen: Where to listen; loopback port 8080 by default.
    ///   - threadCount: Worker threads; twice the processor count by default.
    ///   - bodyLimit: Bytes; 1 MiB by default.
    ///   - limits: Connection limits and deadlines; ``HTTPServerLimits``' defaults unless given.
    ///   - connectionTimeout: Idle seconds, replacing `limits.idleTimeout` when given.
    public init(
        listen: ListenAddress = .default,
        threadCount: Int = 2 * ProcessInfo.processInfo.activeProcessorCount,
        bodyLimit: Int = 1 << 20,
        limits: HTTPServerLimits = HTTPServerLimits(),
        connectionTimeout: Int? = nil
    ) {
        self.listen = listen
        self.threadCount = threadCount
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
        guard (0...(1 << 30)).contains(bodyLimit) else {
            throw HTTPServerError(.invalidConfiguration, "bodyLimit must be 0...1 GiB, got \(bodyLimit)")
        }
        try limits.validate(threadCount: threadCount)
    }
}
