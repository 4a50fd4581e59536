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
    /// Seconds of inactivity after which a connection is closed, bounding slow clients.
    public var connectionTimeout: Int

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - listen: Where to listen; loopback port 8080 by default.
    ///   - threadCount: Worker threads; twice the processor count by default.
    ///   - bodyLimit: Bytes; 1 MiB by default.
    ///   - connectionTimeout: Seconds; 30 by default.
    public init(
        listen: ListenAddress = .default,
        threadCount: Int = 2 * ProcessInfo.processInfo.activeProcessorCount,
        bodyLimit: Int = 1 << 20,
        connectionTimeout: Int = 30
    ) {
        self.listen = listen
        self.threadCount = threadCount
        self.bodyLimit = bodyLimit
        self.connectionTimeout = connectionTimeout
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
        guard (1...86_400).contains(connectionTimeout) else {
            throw HTTPServerError(
                .invalidConfiguration, "connectionTimeout must be 1...86400 seconds, got \(connectionTimeout)")
        }
    }
}
