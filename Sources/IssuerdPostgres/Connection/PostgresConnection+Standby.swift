import Foundation

/// Where a server stands in streaming replication, as ``PostgresConnection/standbyStatus()``
/// reads it.
public struct PostgresStandbyStatus: Sendable, Equatable {
    /// Whether the server is a standby (in recovery); false for a primary.
    public var inRecovery: Bool
    /// How far behind the primary the standby's data is, in seconds: 0 when it has replayed all
    /// it received (an idle primary sends nothing, so the time since the last replayed commit says
    /// nothing then), else the time since the last commit it replayed. Nil on a primary, and on a
    /// standby that has replayed no commit since it started.
    public var lagSeconds: Double?
    /// Whether replay is paused (`pg_wal_replay_pause()`): the lag then grows with every commit.
    public var replayPaused: Bool

    /// Creates the value from every stored property.
    public init(inRecovery: Bool, lagSeconds: Double?, replayPaused: Bool) {
        self.inRecovery = inRecovery
        self.lagSeconds = lagSeconds
        self.replayPaused = replayPaused
    }
}

extension PostgresConnection {
    /// Reads whether this server is a standby and how far its replay is behind (PostgreSQL's
    /// recovery information functions; any role may call them).
    ///
    /// - Throws: ``PostgresError`` when the query fails.
    public func standbyStatus() throws -> PostgresStandbyStatus {
        let row = try query(
            """
            SELECT pg_is_in_recovery() AS standby,
                   CASE WHEN NOT pg_is_in_recovery() THEN NULL
                        WHEN pg_last_wal_receive_lsn() IS NOT NULL
                             AND pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0::float8
                        ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8 END AS lag,
                   pg_is_in_recovery() AND pg_get_wal_replay_pause_state() <> 'not paused' AS paused
            """
        ).first
        guard let row else { return PostgresStandbyStatus(inRecovery: false, lagSeconds: nil, replayPaused: false) }
        let lag: Double? = try row.decode("lag")
        return PostgresStandbyStatus(
            inRecovery: try row.decode("standby"), lagSeconds: lag.map { max(0, $0) },
            replayPaused: try row.decode("paused"))
    }
}
