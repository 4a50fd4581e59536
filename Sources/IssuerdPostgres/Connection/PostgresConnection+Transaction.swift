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
        try execute(unsafeSQL: "BEGIN ISOLATION LEVEL " + isolation.rawValue)
        do {
            let value = try body(self)
            // COMMIT of a transaction in which a statement failed (and `body` swallowed the
            // error) succeeds with the tag ROLLBACK: that is a failure, not a commit.
            let tag = try executeReturningTag(unsafeSQL: "COMMIT")
            guard tag == "COMMIT" else {
                throw PostgresError.rolledBackByFailedStatement()
            }
            return value
        } catch {
            rollbackQuietly()
            throw error
        }
    }

    /// Ends any open transaction; a failure here leaves the connection for the pool to discard.
    func rollbackQuietly() {
        guard isConnected else { return }
        _ = try? executeReturningTag(unsafeSQL: "ROLLBACK")
    }
}
