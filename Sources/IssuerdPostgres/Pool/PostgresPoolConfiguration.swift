/// How a ``PostgresPool`` connects and how long callers wait.
public struct PostgresPoolConfiguration: Sendable, CustomStringConvertible {
    /// A libpq URI or conninfo string. It may hold a password: ``description`` masks it.
    public var connectionString: String
    /// The most connections open at once (at least 1). Size it to the database concurrency:
    /// every HTTP worker thread blocks on its connection for the length of a request.
    public var size: Int
    /// How long a caller waits for a connection, free or newly opened, before
    /// ``PostgresError/Code/poolTimeout`` (or ``PostgresError/Code/unavailable`` when opening
    /// one failed or ran out of this time).
    public var acquireTimeout: Duration
    /// How long one connection attempt may take (within ``acquireTimeout`` when a borrower waits for it).
    public var connectTimeout: Duration
    /// Every connection's ``PostgresConnection/statementTimeout``: how long one statement (or
    /// one round trip of a pipeline) waits for the server before it is abandoned with
    /// ``PostgresError/Code/timedOut`` and its connection closed; nil waits as long as it takes.
    public var statementTimeout: Duration?
    /// Over TCP, how long sent data (a statement, a keepalive probe) may go unacknowledged
    /// before the connection is given up as dead (libpq `tcp_user_timeout`, with keepalive
    /// probes after one second of silence); `nil` keeps libpq's slower keepalives (10 s idle,
    /// 3 × 5 s). A peer behind a network partition sends no reset, so without this a statement
    /// waits for the kernel's retransmissions. A connection string's own values win.
    public var deadPeerTimeout: Duration?

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - connectionString: Where to connect, e.g. `postgresql://issuerd@localhost/issuerd`.
    ///   - size: Maximum open connections; values below 1 count as 1.
    ///   - acquireTimeout: Maximum wait for a free connection.
    ///   - connectTimeout: Maximum time to establish one connection.
    ///   - deadPeerTimeout: How soon a silent peer is given up over TCP (see ``deadPeerTimeout``).
    ///   - statementTimeout: The client-side deadline of every statement (see ``statementTimeout``).
    public init(
        connectionString: String, size: Int = 10, acquireTimeout: Duration = .seconds(5),
        connectTimeout: Duration = .seconds(2), deadPeerTimeout: Duration? = nil, statementTimeout: Duration? = nil
    ) {
        self.connectionString = connectionString
        self.size = max(1, size)
        self.acquireTimeout = acquireTimeout
        self.connectTimeout = connectTimeout
        self.deadPeerTimeout = deadPeerTimeout
        self.statementTimeout = statementTimeout
    }

    public var description: String {
        let target = (try? PostgresConnectionString(connectionString))?.description ?? "<unparseable connection string>"
        return
            "PostgresPoolConfiguration(\(target), size: \(size), acquireTimeout: \(acquireTimeout), connectTimeout: \(connectTimeout), deadPeerTimeout: \(deadPeerTimeout.map { "\($0)" } ?? "nil"), statementTimeout: \(statementTimeout.map { "\($0)" } ?? "nil"))"
    }
}
