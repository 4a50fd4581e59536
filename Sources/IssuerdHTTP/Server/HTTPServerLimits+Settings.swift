import IssuerdCore

extension HTTPServerLimits {
    /// Reads the `ISSUERD_HTTP_*` connection settings (docs/configuration.md); each unset one
    /// keeps its default.
    ///
    /// - Parameter threads: `ISSUERD_HTTP_THREADS`: libmicrohttpd gives each thread its share of
    ///   the connection limit, so the limit must be at least one per thread.
    /// - Throws: ``ConfigurationError`` naming the first setting out of its range.
    package init(_ reader: ConfigurationReader, threads: Int) throws {
        let defaults = HTTPServerLimits()
        let total = try reader.integer(
            "ISSUERD_HTTP_MAX_CONNECTIONS", default: max(defaults.maxConnections, threads),
            in: max(threads, 1)...Self.maxConnectionsRange.upperBound)
        self.init(
            maxConnections: total,
            maxConnectionsPerAddress: try reader.integer(
                "ISSUERD_HTTP_MAX_CONNECTIONS_PER_ADDRESS", default: min(defaults.maxConnectionsPerAddress, total),
                in: 1...total),
            connectionMemory: try reader.integer(
                "ISSUERD_HTTP_CONNECTION_MEMORY", default: defaults.connectionMemory, in: Self.connectionMemoryRange),
            headTimeout: try reader.duration(
                "ISSUERD_HTTP_HEAD_TIMEOUT", default: defaults.headTimeout, in: Self.headTimeoutRange),
            bodyTimeout: try reader.duration(
                "ISSUERD_HTTP_BODY_TIMEOUT", default: defaults.bodyTimeout, in: Self.bodyTimeoutRange),
            idleTimeout: Int(
                try reader.duration(
                    "ISSUERD_HTTP_IDLE_TIMEOUT", default: .seconds(defaults.idleTimeout),
                    in: .seconds(Self.idleTimeoutRange.lowerBound)...(.seconds(Self.idleTimeoutRange.upperBound))
                ).components.seconds))
    }
}
