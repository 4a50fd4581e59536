/// How many connections the server holds, how much memory each may take, and how long a client
/// may take to send a request: the bounds that keep one client from using up the server.
///
/// libmicrohttpd enforces the counts, the memory and the idle timeout itself; the head and body
/// deadlines, which it lacks, are ``ConnectionDeadlines``'. The defaults fit one instance behind
/// the proxy of `deploy/nginx.conf` (sizing in `deploy/README.md`).
public struct HTTPServerLimits: Sendable, Equatable {
    /// Connections open at once, all clients together; beyond it the kernel's backlog queues
    /// new ones until a connection closes.
    public var maxConnections: Int
    /// Connections open at once from one IP address; one more is closed as soon as it is accepted.
    public var maxConnectionsPerAddress: Int
    /// Bytes of libmicrohttpd's memory per connection: the request head and the read and write
    /// buffers (a head that does not fit is 431 or 414). Request bodies are bounded separately.
    public var connectionMemory: Int
    /// How long a connection may take, from being accepted or from finishing its previous
    /// response, to deliver a complete request head. Also how long a kept-alive connection may
    /// stay idle between requests.
    public var headTimeout: Duration
    /// How long a request's body may take to arrive once its head has.
    public var bodyTimeout: Duration
    /// Seconds without any byte in either direction after which libmicrohttpd closes the
    /// connection (bounds a client that stops reading its response).
    public var idleTimeout: Int

    /// Creates limits; every default is the documented default of its `ISSUERD_HTTP_*` setting.
    public init(
        maxConnections: Int = 512,
        maxConnectionsPerAddress: Int = 128,
        connectionMemory: Int = 32 * 1024,
        headTimeout: Duration = .seconds(10),
        bodyTimeout: Duration = .seconds(20),
        idleTimeout: Int = 30
    ) {
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.connectionMemory = connectionMemory
        self.headTimeout = headTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
    }

    /// The accepted ranges, shared by ``validate(threadCount:)`` and the settings reader.
    package static let maxConnectionsRange = 1...65_536
    package static let connectionMemoryRange = (8 * 1024)...(1 << 20)
    package static let headTimeoutRange = Duration.milliseconds(100)...Duration.seconds(600)
    package static let bodyTimeoutRange = Duration.milliseconds(100)...Duration.seconds(3600)
    package static let idleTimeoutRange = 1...86_400

    /// Checks ranges before any socket is opened.
    ///
    /// - Parameter threadCount: libmicrohttpd shares the connection limit out among its
    ///   threads, so each must get at least one.
    /// - Throws: ``HTTPServerError`` `invalid_configuration` naming the bad value.
    public func validate(threadCount: Int) throws {
        func refuse(_ message: String) -> HTTPServerError { HTTPServerError(.invalidConfiguration, message) }
        guard Self.maxConnectionsRange.contains(maxConnections), maxConnections >= threadCount else {
            throw refuse(
                "maxConnections must be \(threadCount)...65536 (at least one per thread), got \(maxConnections)")
        }
        guard (1...maxConnections).contains(maxConnectionsPerAddress) else {
            throw refuse("maxConnectionsPerAddress must be 1...\(maxConnections), got \(maxConnectionsPerAddress)")
        }
        guard Self.connectionMemoryRange.contains(connectionMemory) else {
            throw refuse("connectionMemory must be 8 KiB...1 MiB, got \(connectionMemory)")
        }
        guard Self.headTimeoutRange.contains(headTimeout), Self.bodyTimeoutRange.contains(bodyTimeout) else {
            throw refuse("headTimeout must be 100ms...600s and bodyTimeout 100ms...3600s")
        }
        guard Self.idleTimeoutRange.contains(idleTimeout) else {
            throw refuse("idleTimeout must be 1...86400 seconds, got \(idleTimeout)")
        }
    }
}
