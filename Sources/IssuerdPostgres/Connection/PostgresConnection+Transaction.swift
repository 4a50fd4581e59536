extension PostgresConnection {
    /// Runs `body` inside `BEGIN … COMMIT` on this connection, once, without retrying.
    ///
    /// Any error thrown by `body` or by `COMMIT` rolls the transaction back and is rethrown.
    /// ``PostgresPool/transaction(isolation:maxAttempts:_:)`` adds retries on top.
    /// - Parameters:
    ///   - isolation: The isolation level for this transaction.
    ///   - body: The work; it must not issue its own `COMMIT` or `ROLLBACK`.
    /// - Returns: What `body` returned, once committed.
    /// - Throws: ``PostgresError`` from any statement, or whatever `body` threw.
    @discardableResult
    public func transaction<T>(
        isolation: IsolationLevel = .readCommitted, _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        try beginTransaction(isolation: isolation)
        do {
            let value = try body(self)
            try commitTransaction()
            return value
        } catch {
            rollbackQuietly()
            throw error
        }
    }

    /// Opens a transaction that no single closure spans (a chunk read on one thread and written
    /// on another); ``commitTransaction()`` ends it, or ``rollbackQuietly()`` on failure.
    public func beginTransaction(isolation: IsolationLevel = .readCommitted) throws {
        try execute(unsafeSQL: "BEGIN ISOLATION LEVEL " + isolation.rawValue)
    }

    /// Commits the open transaction.
    ///
    /// - Throws: ``PostgresError`` when it was rolled back instead (a statement in it failed).
    public func commitTransaction() throws {
        // COMMIT of a transaction in which a statement failed (and the caller swallowed the
        // error) succeeds with the tag ROLLBACK: that is a failure, not a commit.
        let tag = try executeReturningTag(unsafeSQL: "COMMIT")
        guard tag == "COMMIT" else {
            throw PostgresError.rolledBackByFailedStatement()
        }
    }

    /// Ends any open transaction; a failure here leaves the connection for the pool to discard.
    public func rollbackQuietly() {
        guard isConnected else { return }
        _ = try? executeReturningTag(unsafeSQL: "ROLLBACK")
    }
}
