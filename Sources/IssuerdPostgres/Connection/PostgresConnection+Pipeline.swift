import CPostgres

extension PostgresConnection {
    /// Runs `queries` in order in one round trip (libpq pipeline mode) and returns their rows.
    ///
    /// Each statement still runs on its own, with its own snapshot under READ COMMITTED: a
    /// statement that waits for a lock sees what committed while it waited. When one fails, the
    /// server skips the rest and the first error is thrown. Outside a transaction block the
    /// statements form one implicit transaction (all commit, or none); inside one, the
    /// transaction is aborted, as after any failed statement.
    ///
    /// The connection uses blocking I/O, so a pipeline must stay small (a few statements of at
    /// most some kilobytes each): libpq writes everything before it reads.
    /// - Throws: ``PostgresError``, as for ``query(_:file:line:)``.
    @discardableResult
    public func pipeline(_ queries: [PostgresQuery], file: String = #fileID, line: Int = #line) throws -> [PostgresRows] {
        guard !queries.isEmpty else { return [] }
        // Preparing is synchronous, so new statements are prepared before the pipeline starts.
        let bound = try queries.map { try bind($0, file: file, line: line) }
        guard PQenterPipelineMode(handle) == 1 else {
            throw PostgresError(code: isConnected ? .other : .unavailable, message: Self.errorMessage(of: handle), file: file, line: line)
        }
        defer { PQexitPipelineMode(handle) }
        for query in bound {
            let sent = query.withPointers { pointers, lengths, formats -> Int32 in
                if let name = query.preparedName {
                    return PQsendQueryPrepared(handle, name, Int32(query.count), pointers, lengths, formats, 0)
                }
                return PQsendQueryParams(handle, query.sql, Int32(query.count), query.types, pointers, lengths, formats, 0)
            }
            guard sent == 1 else { throw abandonPipeline(file: file, line: line) }
        }
        guard PQpipelineSync(handle) == 1 else { throw abandonPipeline(file: file, line: line) }

        // Each statement's results end with a NULL; the sync point ends the pipeline.
        var results: [PostgresResult?] = Array(repeating: nil, count: bound.count)
        var firstError: PostgresError?
        var failedStatement: String?
        var index = 0
        while true {
            guard let result = PQgetResult(handle) else {
                index += 1
                // More NULLs than statements: the connection broke before the sync point.
                if index > bound.count || !isConnected { throw firstError ?? lostConnection(file: file, line: line) }
                continue
            }
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC {
                PQclear(result)
                break
            }
            if status == PGRES_PIPELINE_ABORTED {
                PQclear(result)
                continue
            }
            do {
                let checked = try check(result, file: file, line: line)
                if index < results.count { results[index] = checked }
            } catch let error as PostgresError {
                if firstError == nil {
                    firstError = error
                    failedStatement = index < bound.count ? bound[index].preparedName : nil
                }
            }
        }
        if let firstError {
            // Out of pipeline mode first: forgetting may free the statement with a plain command.
            PQexitPipelineMode(handle)
            forgetInvalidated(failedStatement, after: firstError)
            throw firstError
        }
        return try results.map { result in
            guard let result else {
                throw PostgresError(code: .other, message: "a pipelined statement returned no result", file: file, line: line)
            }
            return PostgresRows(result: result)
        }
    }

    /// Sending failed part-way. The connection is left busy or broken, so the pool discards it
    /// rather than reuse a session in an unknown state (see `prepareForReuse`).
    private func abandonPipeline(file: String, line: Int) -> PostgresError {
        let message = Self.errorMessage(of: handle)
        return PostgresError(code: .unavailable, message: "pipeline failed: \(message)", file: file, line: line)
    }

    private func lostConnection(file: String, line: Int) -> PostgresError {
        PostgresError(code: .unavailable, message: "connection lost in a pipeline: \(Self.errorMessage(of: handle))", file: file, line: line)
    }

    /// A transaction whose first and last statements travel with `BEGIN` and `COMMIT`: two round
    /// trips for a read-decide-write transaction instead of one per statement.
    ///
    /// Sends `BEGIN` and `opening` together, runs `body` with their rows (it may run more
    /// statements), then sends the statements `body` returns together with `COMMIT`. Any error
    /// rolls the transaction back and is rethrown, as ``transaction(isolation:_:)`` does.
    /// - Returns: The value `body` returned, once committed.
    public func pipelinedTransaction<T>(
        isolation: IsolationLevel = .readCommitted, opening: [PostgresQuery],
        _ body: (PostgresConnection, [PostgresRows]) throws -> (value: T, closing: [PostgresQuery]),
        file: String = #fileID, line: Int = #line
    ) throws -> T {
        do {
            let opened = try pipeline([PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL " + isolation.rawValue)] + opening, file: file, line: line)
            let (value, closing) = try body(self, Array(opened.dropFirst()))
            let closed = try pipeline(closing + [PostgresQuery(unsafeSQL: "COMMIT")], file: file, line: line)
            // COMMIT of a failed transaction answers ROLLBACK: that is a failure, not a commit.
            guard closed.last?.commandTag == "COMMIT" else {
                throw PostgresError(code: .other, message: "transaction was rolled back because a statement inside it failed", file: file, line: line)
            }
            return value
        } catch {
            rollbackQuietly()
            throw error
        }
    }
}
