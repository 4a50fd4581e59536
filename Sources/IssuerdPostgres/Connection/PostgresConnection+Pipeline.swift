import CPostgres
import Foundation

extension PostgresConnection {
    /// Runs `statements` in order in one round trip (libpq pipeline mode) and returns their
    /// results, each read through the handle appending it returned (``PostgresPipeline/append(_:)``).
    ///
    /// Each statement still runs on its own, with its own snapshot under READ COMMITTED: a
    /// statement that waits for a lock sees what committed while it waited. When one fails, the
    /// server skips the rest and the first error is thrown. Outside a transaction block the
    /// statements form one implicit transaction (all commit, or none); inside one, the
    /// transaction is aborted, as after any failed statement.
    ///
    /// libpq writes everything before it reads, so a pipeline must stay small (a few statements
    /// of at most some kilobytes each). The round trip is one wait for ``statementTimeout``.
    /// Outside a transaction block, a pipeline that failed because a schema change invalidated a
    /// prepared statement (nothing of it committed) is sent once more, the statement prepared
    /// afresh.
    /// - Throws: ``PostgresError``, as for ``query(_:file:line:)``.
    @discardableResult
    public func pipeline(
        _ statements: PostgresPipeline, file: String = #fileID, line: Int = #line
    ) throws -> PostgresPipelineResults {
        try retryingInvalidatedPlan { try pipelineOnce(statements, file: file, line: line) }
    }

    private func pipelineOnce(
        _ statements: PostgresPipeline, file: String, line: Int
    ) throws -> PostgresPipelineResults {
        let queries = statements.queries
        guard !queries.isEmpty else { return PostgresPipelineResults([]) }
        try refuseInsideImplicitTransaction(file: file, line: line)
        // Preparing is synchronous, so new statements are prepared before the pipeline starts.
        let bound = try queries.map { try bind($0, file: file, line: line) }
        try refuseIfAbandoned(file: file, line: line)
        let deadline = roundTripDeadline()
        try enterPipelineMode(file: file, line: line)
        defer { PQexitPipelineMode(handle) }
        try send(bound, file: file, line: line)
        try sync(until: deadline, file: file, line: line)
        return PostgresPipelineResults(
            try collect(bound, throughSync: true, until: deadline, file: file, line: line).map(
                PostgresRows.init(result:)))
    }

    /// Sends the sync point and everything before it.
    private func sync(until deadline: ContinuousClock.Instant?, file: String, line: Int) throws {
        guard PQpipelineSync(handle) == 1 else { throw abandonPipeline(file: file, line: line) }
        try flushOutput(until: deadline, file: file, line: line)
    }

    private func enterPipelineMode(file: String, line: Int) throws {
        guard PQenterPipelineMode(handle) == 1 else {
            throw PostgresError(
                code: isConnected ? .other : .unavailable, message: Self.errorMessage(of: handle), file: file,
                line: line)
        }
    }

    private func send(_ bound: [BoundQuery], file: String, line: Int) throws {
        for query in bound {
            let sent = query.withPointers { pointers, lengths, formats -> Int32 in
                if let name = query.preparedName {
                    return PQsendQueryPrepared(handle, name, Int32(query.count), pointers, lengths, formats, 0)
                }
                return PQsendQueryParams(
                    handle, query.sql, Int32(query.count), query.types, pointers, lengths, formats, 0)
            }
            guard sent == 1 else { throw abandonPipeline(file: file, line: line) }
        }
    }

    /// Reads the results of `bound`, sent last; with `throughSync`, also the sync point that
    /// follows them, without it (after a flush request) only the statements' own results.
    /// The first failure is thrown once every result is read (libpq answers the statements a
    /// failure skipped with `PGRES_PIPELINE_ABORTED`, without waiting for the server).
    private func collect(
        _ bound: [BoundQuery], throughSync: Bool, until deadline: ContinuousClock.Instant?, file: String, line: Int
    ) throws -> [PostgresResult] {
        // Each statement's results end with a NULL; the sync point ends the pipeline.
        var results: [PostgresResult?] = Array(repeating: nil, count: bound.count)
        var firstError: PostgresError?
        var failedStatement: String?
        var index = 0
        while throughSync || index < bound.count {
            guard let result = try nextResult(until: deadline, file: file, line: line) else {
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
                let checked = try check(
                    result, statement: index < bound.count ? bound[index].preparedName : nil, file: file, line: line)
                if index < results.count { results[index] = checked }
            } catch let error as PostgresError {
                if firstError == nil {
                    firstError = error
                    failedStatement = index < bound.count ? bound[index].preparedName : nil
                }
            }
        }
        if let firstError {
            if !throughSync {
                // The server skips everything up to a sync point, which ends the (failed)
                // implicit transaction: send one, and read to it. (If it cannot be sent, the
                // transaction stays open and the connection is discarded.)
                guard (try? sync(until: deadline, file: file, line: line)) != nil else { throw firstError }
                if implicitTransaction == .open { implicitTransaction = .failed }
                _ = try? collect([], throughSync: true, until: deadline, file: file, line: line)
            }
            // Out of pipeline mode first: forgetting may free the statement with a plain command.
            PQexitPipelineMode(handle)
            forgetInvalidated(failedStatement, after: firstError)
            throw firstError
        }
        return try results.map { result in
            guard let result else {
                throw PostgresError(
                    code: .other, message: "a pipelined statement returned no result", file: file, line: line)
            }
            return result
        }
    }

    /// Sending failed part-way. The connection is left busy or broken, so the pool discards it
    /// rather than reuse a session in an unknown state (see `prepareForReuse`).
    private func abandonPipeline(file: String, line: Int) -> PostgresError {
        let message = Self.errorMessage(of: handle)
        return PostgresError(code: .unavailable, message: "pipeline failed: \(message)", file: file, line: line)
    }

    private func lostConnection(file: String, line: Int) -> PostgresError {
        PostgresError(
            code: .unavailable, message: "connection lost in a pipeline: \(Self.errorMessage(of: handle))", file: file,
            line: line)
    }

    /// A transaction in two round trips for a read-decide-write transaction: `opening` is sent
    /// at once, `body` runs with their results, read through the handles `opening` gave out (it
    /// may run more statements only at other isolation levels, see below), and the statements
    /// `body` returns are sent together and committed.
    /// Any error rolls the transaction back and is rethrown, as ``transaction(isolation:_:)``
    /// does.
    ///
    /// At READ COMMITTED the transaction is the pipeline's implicit one, with no `BEGIN` or
    /// `COMMIT` statement: `opening` is followed by a flush request (the server answers them and
    /// the transaction stays open), the closing statements by the sync point, at which the
    /// server commits (durably, before it answers the sync). A `body` that throws sends
    /// `ROLLBACK`, which ends an implicit transaction without committing it. The isolation is
    /// then the session's `default_transaction_isolation` (READ COMMITTED unless the server is
    /// configured otherwise; issuerd's sessions set it). Statements `body` runs on the
    /// connection travel in the pipeline too; once one fails, the transaction has ended and no
    /// further statement runs (nor a pipeline, nor another transaction, at any time inside
    /// `body`). At other levels, `BEGIN` and `COMMIT` travel with the first and last statements.
    ///
    /// A transaction that failed because a schema change invalidated one of its prepared
    /// statements (a migration applied meanwhile; nothing of it committed) runs once more, its
    /// statements prepared afresh; one that PostgreSQL ended for a deadlock or a serialization
    /// failure (nothing of it committed either) runs again after a short jittered backoff, as
    /// ``PostgresPool/transaction(isolation:maxAttempts:_:)`` retries, up to `maxAttempts` in
    /// all. `body` may therefore run more than once, so it must have no effect outside the
    /// database.
    ///
    /// - Returns: The value `body` returned, once committed.
    public func pipelinedTransaction<T>(
        isolation: IsolationLevel = .readCommitted, opening: PostgresPipeline, maxAttempts: Int = 5,
        _ body: (PostgresConnection, PostgresPipelineResults) throws -> (value: T, closing: [PostgresQuery]),
        file: String = #fileID, line: Int = #line
    ) throws -> T {
        var attempt = 1
        while true {
            do {
                return try retryingInvalidatedPlan {
                    try pipelinedTransactionOnce(isolation: isolation, opening: opening, body, file: file, line: line)
                }
            } catch let error as PostgresError
                where error.isTransient && attempt < maxAttempts && !mustDiscard && isIdleOutsideTransaction
            {
                logger.debug(
                    "postgres pipelined transaction retried",
                    ["attempt": .int(attempt), "code": .string(error.code.name)])
                Thread.sleep(forTimeInterval: PostgresPool.backoff(attempt: attempt))
                attempt += 1
            }
        }
    }

    private func pipelinedTransactionOnce<T>(
        isolation: IsolationLevel, opening: PostgresPipeline,
        _ body: (PostgresConnection, PostgresPipelineResults) throws -> (value: T, closing: [PostgresQuery]),
        file: String, line: Int
    ) throws -> T {
        try refuseInsideImplicitTransaction(file: file, line: line)
        // Inside ``transaction(isolation:_:)`` its statements would join the open transaction
        // and a failing body's ROLLBACK would end that one: a transaction cannot nest.
        guard PQtransactionStatus(handle) != PQTRANS_INTRANS, PQtransactionStatus(handle) != PQTRANS_INERROR else {
            throw PostgresError(
                code: .other, message: "a pipelined transaction cannot run inside another transaction", file: file,
                line: line)
        }
        guard isolation == .readCommitted else {
            return try explicitPipelinedTransaction(
                isolation: isolation, opening: opening, body, file: file, line: line)
        }
        let bound = try opening.queries.map { try bind($0, file: file, line: line) }
        try refuseIfAbandoned(file: file, line: line)
        let opened = roundTripDeadline()
        try enterPipelineMode(file: file, line: line)
        defer {
            // Left without a sync point: the server may hold the transaction open.
            if implicitTransaction == .open { mustDiscard = true }
            implicitTransaction = .none
            PQexitPipelineMode(handle)
        }
        // From the first statement sent, the transaction is open until a sync point is sent.
        implicitTransaction = .open
        try send(bound, file: file, line: line)
        try flushRequest(until: opened, file: file, line: line)
        let rows = PostgresPipelineResults(
            try collect(bound, throughSync: false, until: opened, file: file, line: line).map(
                PostgresRows.init(result:)))
        let value: T
        let closing: [BoundQuery]
        do {
            let decided = try body(self, rows)
            // A statement of `body` failed (and `body` went on): the server already ended the
            // transaction without committing, so the closing statements must not run alone.
            guard implicitTransaction == .open else {
                throw PostgresError.rolledBackByFailedStatement(file: file, line: line)
            }
            value = decided.value
            // Not prepared inside the transaction: preparing is a round trip ending in a sync
            // point, which would commit it. A new statement runs unnamed and is prepared after.
            closing = try decided.closing.map { try bind($0, preparing: false, file: file, line: line) }
        } catch {
            endImplicitTransactionWithRollback()
            throw error
        }
        let closed = roundTripDeadline()
        try send(closing, file: file, line: line)
        // Once the sync point is queued the server commits when it gets it, even if the flush
        // or the answer does not come back in time (the transaction is then no longer open here).
        guard PQpipelineSync(handle) == 1 else { throw abandonPipeline(file: file, line: line) }
        implicitTransaction = .none
        try flushOutput(until: closed, file: file, line: line)
        _ = try collect(closing, throughSync: true, until: closed, file: file, line: line)
        PQexitPipelineMode(handle)
        for query in closing where query.preparedName == nil { prepareForNextTime(query) }
        return value
    }

    /// Asks the server to send what it has answered so far without ending the implicit
    /// transaction (a sync point would commit it), and sends everything queued.
    private func flushRequest(until deadline: ContinuousClock.Instant?, file: String, line: Int) throws {
        guard PQsendFlushRequest(handle) == 1 else { throw abandonPipeline(file: file, line: line) }
        try flushOutput(until: deadline, file: file, line: line)
    }

    /// A statement `body` runs inside an implicit pipelined transaction (``query(_:file:line:)``
    /// routes here): sent with a flush request, so the transaction stays open.
    func runInImplicitTransaction(_ query: PostgresQuery, file: String, line: Int) throws -> PostgresResult {
        let bound = try bind(query, preparing: false, file: file, line: line)
        try refuseIfAbandoned(file: file, line: line)
        let deadline = roundTripDeadline()
        try send([bound], file: file, line: line)
        try flushRequest(until: deadline, file: file, line: line)
        return try collect([bound], throughSync: false, until: deadline, file: file, line: line)[0]
    }

    /// Sends `ROLLBACK` and the sync point after a failed decision: the implicit transaction
    /// ends with nothing committed. A connection where even that fails stays marked open and
    /// is discarded (``mustDiscard``).
    private func endImplicitTransactionWithRollback() {
        guard implicitTransaction == .open, !abandoned else { return }  // a failed statement already ended it
        let deadline = roundTripDeadline()
        let rollback = BoundQuery(sql: "ROLLBACK", storage: [0])
        guard (try? send([rollback], file: #fileID, line: #line)) != nil, PQpipelineSync(handle) == 1 else { return }
        implicitTransaction = .none
        guard (try? flushOutput(until: deadline, file: #fileID, line: #line)) != nil else { return }
        _ = try? collect([rollback], throughSync: true, until: deadline, file: #fileID, line: #line)
    }

    /// A pipeline's sync point, or another transaction, inside a pipelined transaction's body
    /// would end (commit) that transaction: refused.
    private func refuseInsideImplicitTransaction(file: String, line: Int) throws {
        guard implicitTransaction == .none else {
            throw PostgresError(
                code: .other, message: "a pipeline cannot run inside a pipelined transaction's body", file: file,
                line: line)
        }
    }

    /// The explicit form, for isolation levels above READ COMMITTED: `BEGIN` travels with the
    /// opening statements, `COMMIT` with the closing ones.
    private func explicitPipelinedTransaction<T>(
        isolation: IsolationLevel, opening: PostgresPipeline,
        _ body: (PostgresConnection, PostgresPipelineResults) throws -> (value: T, closing: [PostgresQuery]),
        file: String, line: Int
    ) throws -> T {
        do {
            let opened = try pipeline(
                PostgresPipeline(
                    [PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL " + isolation.rawValue)] + opening.queries),
                file: file, line: line)
            // The handles `opening` gave out count from its first statement, after `BEGIN`.
            let (value, closing) = try body(self, opened.dropping(first: 1))
            let closed = try pipeline(
                PostgresPipeline(closing + [PostgresQuery(unsafeSQL: "COMMIT")]), file: file, line: line)
            // COMMIT of a failed transaction answers ROLLBACK: that is a failure, not a commit.
            guard closed.lastCommandTag == "COMMIT" else {
                throw PostgresError.rolledBackByFailedStatement(file: file, line: line)
            }
            return value
        } catch {
            rollbackQuietly()
            throw error
        }
    }
}
