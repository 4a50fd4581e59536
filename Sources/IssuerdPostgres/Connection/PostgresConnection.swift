import CPostgres
import Foundation
import IssuerdCore

/// One libpq connection (`PGconn`), used by one thread at a time.
///
/// Statements run synchronously on the calling thread; results always come back in text
/// format. Most code borrows a connection from ``PostgresPool`` rather than making one. Every
/// wait for the server is bounded by ``statementTimeout`` when it is set (see
/// `PostgresConnection+Waiting.swift`).
public final class PostgresConnection {
    let handle: OpaquePointer
    let logger: Logger
    /// Statements prepared on this session, by SQL text and parameter types.
    ///
    /// The hot paths run the same few statements thousands of times; preparing them once per
    /// connection saves the server a parse and (after a few runs, with generic plans) a plan
    /// per execution, which profiling showed as most of its CPU for a provisioning decision.
    /// A connection is never reset in place (the pool replaces broken ones), so the cache lives
    /// exactly as long as the server session that holds the statements.
    private var prepared: [PreparedKey: String] = [:]
    private var preparedCounter = 0
    /// Where ``pipelinedTransaction(isolation:opening:_:file:line:)`` stands in the pipeline's
    /// implicit transaction. While it is open, statements travel in the pipeline, never by a
    /// synchronous call whose sync point would commit it; once a statement inside it failed
    /// (the server ended it), no statement runs until the transaction call returns.
    enum ImplicitTransaction { case none, open, failed }
    var implicitTransaction = ImplicitTransaction.none
    /// Set when a pipelined transaction ended without its sync point reaching the server: the
    /// session may still hold it open, with its locks and writes, while libpq reports it idle
    /// (it learns the state only at a sync). The pool must not hand such a session out again.
    var mustDiscard = false
    /// How long one statement, or one round trip of a pipeline, may wait for the server's
    /// answer; nil waits as long as it takes. Past it the statement is abandoned: a cancel
    /// request goes to the server in the background, the connection takes no further statement
    /// (``isConnected`` turns false, the pool closes it), and ``PostgresError/Code/timedOut`` is
    /// thrown. A server that stopped without closing its sockets is noticed only this way.
    public var statementTimeout: Duration?
    /// Set when a statement got no answer within ``statementTimeout``: the server may still
    /// run what it received, so the session is never used again.
    var abandoned = false
    /// The result columns of each prepared statement that returned rows, by statement name.
    private var preparedColumns: [String: PostgresColumns] = [:]
    /// Beyond this many, statements run unprepared (dynamic SQL must not grow the cache forever).
    public static let preparedStatementLimit = 256

    /// Opens a connection and prepares the session for this module's decoders.
    ///
    /// - Parameters:
    ///   - connectionString: A libpq URI (`postgresql://…`) or conninfo (`host=… dbname=…`).
    ///   - connectTimeout: How long connecting and preparing the session may take in all
    ///     (libpq's non-blocking connect, so any length counts, not whole seconds). Resolving a
    ///     host name is libpq's blocking `getaddrinfo`, outside this bound.
    ///   - statementTimeout: The connection's ``statementTimeout``.
    ///   - logger: Receives debug lines; never parameter values.
    /// - Throws: ``PostgresError`` with code ``PostgresError/Code/unavailable`` when the server
    ///   cannot be reached, refuses the login or does not finish within `connectTimeout`.
    public init(
        connectionString: String, connectTimeout: Duration = .seconds(2), deadPeerTimeout: Duration? = nil,
        statementTimeout: Duration? = nil, logger: Logger = .silent
    ) throws {
        let deadline = ContinuousClock.now + connectTimeout
        // libpq ignores connect_timeout in a non-blocking connect (the deadline below bounds
        // it); it stays for what reads the options back (``connectionOption(_:)``).
        let timeoutSeconds = max(2, Int(min(connectTimeout.timeInterval, 3600).rounded(.up)))
        // libpq reads the arrays front to back and the last value wins: entries before the
        // expanded `dbname` are defaults the connection string may override, entries after it
        // are requirements of this module (UTF8 text, the configured timeout).
        var parameters: [(String, String)] = [("application_name", "issuerd")]
        if let deadPeerTimeout {
            // Over TCP, give up a peer that went silent without a reset (a partition, a dead
            // host) after `deadPeerTimeout`: probes after 1 s of silence, and the connection is
            // dropped once a statement or probe stays unacknowledged that long. A busy server
            // still acknowledges at the TCP level, so a long statement is not cut short.
            let milliseconds = max(1_000, Int(min(deadPeerTimeout.timeInterval, 3600) * 1_000))
            parameters += [
                ("keepalives_idle", "1"), ("keepalives_interval", "1"), ("keepalives_count", "3"),
                ("tcp_user_timeout", String(milliseconds)),
            ]
        } else {
            // Over TCP, notice a silently vanished peer within ~25 s instead of hours.
            parameters += [("keepalives_idle", "10"), ("keepalives_interval", "5"), ("keepalives_count", "3")]
        }
        // Several hosts (a Patroni cluster's nodes, `target_session_attrs=read-write`): libpq
        // moves on from a host that does not answer only in its blocking connect, which applies
        // `connect_timeout` per host (a non-blocking connect would wait on a silent first host
        // until the deadline and never try the leader). There the connection string's own
        // `connect_timeout` wins, and the bound is hosts × that timeout.
        let severalHosts = Self.listsSeveralHosts(connectionString)
        if severalHosts {
            parameters += [("connect_timeout", String(timeoutSeconds)), ("dbname", connectionString)]
        } else {
            parameters += [("dbname", connectionString), ("connect_timeout", String(timeoutSeconds))]
        }
        parameters += [("client_encoding", "UTF8")]
        let handle = CStringArray(parameters.map(\.0)).withPointers { keywords in
            CStringArray(parameters.map(\.1)).withPointers { values in
                severalHosts ? PQconnectdbParams(keywords, values, 1) : PQconnectStartParams(keywords, values, 1)
            }
        }
        guard let handle else {
            throw PostgresError(code: .unavailable, message: "libpq could not allocate a connection")
        }
        let problem: String?
        if severalHosts {
            problem = PQstatus(handle) == CONNECTION_OK ? nil : "could not connect: \(Self.errorMessage(of: handle))"
        } else {
            problem = Self.finishConnecting(handle, until: deadline, timeout: connectTimeout)
        }
        if let problem {
            PQfinish(handle)
            throw PostgresError(code: .unavailable, message: problem)
        }
        self.handle = handle
        self.logger = logger
        // Sends never block either: a statement is queued and flushed as the socket takes it.
        PQsetnonblocking(handle, 1)
        // libpq prints NOTICE and WARNING to stderr by default; they can quote data (RAISE
        // NOTICE), so they are dropped rather than mixed into the JSON log stream.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        // The decoders read ISO timestamps and hex bytea whatever the server's defaults are.
        // Prepared statements keep per-execution (custom) plans: measured on the provisioning
        // workload, generic plans for the velocity time windows doubled the server's CPU.
        // READ COMMITTED by default whatever the server's default: a pipelined transaction is
        // the pipeline's implicit one and takes the session default, and its lock-then-read
        // order needs each statement's own snapshot (``pipelinedTransaction``).
        var settings = "SET DateStyle = 'ISO, MDY'; SET bytea_output = 'hex'; SET plan_cache_mode = force_custom_plan"
        settings += "; SET default_transaction_isolation = 'read committed'"
        if let deadPeerTimeout {
            // The server's side of the same: a backend whose client vanished in a partition
            // while it held a transaction (a customer's lock, say) ends within seconds instead
            // of hours, so other instances are not held behind its locks: keepalives when it sat
            // waiting for the next statement, `tcp_user_timeout` when its last answer was still
            // unacknowledged (retransmitted for ~15 min otherwise). Keepalives are answered by
            // the client's kernel however busy the client is; `tcp_user_timeout` also ends a
            // session whose client leaves a result unread that long (Linux counts zero-window
            // time), so it is at least 10 s, and the serve path reads every result whole
            // (no streaming). Ignored (reads 0) over a Unix socket.
            let milliseconds = max(10_000, Int(min(deadPeerTimeout.timeInterval, 3600) * 1_000))
            settings += "; SET tcp_keepalives_idle = 1; SET tcp_keepalives_interval = 1; SET tcp_keepalives_count = 3"
            settings += "; SET tcp_user_timeout = \(milliseconds)"
        }
        // The session's settings count against the connect deadline.
        self.statementTimeout = max(.milliseconds(1), deadline - ContinuousClock.now)
        do {
            try execute(unsafeSQL: settings)
        } catch let error as PostgresError where error.code == .timedOut {
            throw PostgresError(code: .unavailable, message: "could not connect: no answer within \(connectTimeout)")
        }
        self.statementTimeout = statementTimeout
        logger.debug("postgres connection opened", ["backend_pid": .int(Int(PQbackendPID(handle)))])
    }

    deinit { PQfinish(handle) }

    /// Whether a connection string names more than one host (`host=a,b`, or a URI with
    /// `host1,host2` or `?host=a,b`), as libpq reads it.
    package static func listsSeveralHosts(_ connectionString: String) -> Bool {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &error) else {
            if let error { PQfreemem(error) }
            return false
        }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "host" || String(cString: keyword) == "hostaddr",
                let value = option.pointee.val, String(cString: value).contains(",")
            {
                return true
            }
            option += 1
        }
        return false
    }

    /// Drives libpq's non-blocking connect (`PQconnectPoll`) until the connection is made or
    /// `deadline` passes.
    ///
    /// - Returns: nil when connected, otherwise why not.
    private static func finishConnecting(
        _ handle: OpaquePointer, until deadline: ContinuousClock.Instant, timeout: Duration
    ) -> String? {
        guard PQstatus(handle) != CONNECTION_BAD else { return "could not connect: \(errorMessage(of: handle))" }
        // libpq's protocol: start as if the last poll had asked to wait for writing.
        var state = PGRES_POLLING_WRITING
        while true {
            switch state {
            case PGRES_POLLING_OK:
                return nil
            case PGRES_POLLING_FAILED:
                return "could not connect: \(errorMessage(of: handle))"
            default:
                let events = state == PGRES_POLLING_READING ? Int16(POLLIN) : Int16(POLLOUT)
                // The socket may change between calls (another host, another address).
                switch waitForSocket(PQsocket(handle), events, until: deadline) {
                case .ready: break
                case .timedOut:
                    // The request this was for stops waiting for the database (``PostgresRequestScope``).
                    PostgresRequestScope.current?.gaveUp = true
                    return "could not connect: no answer within \(timeout)"
                case .failed: return "could not connect: \(errorMessage(of: handle))"
                }
                state = PQconnectPoll(handle)
            }
        }
    }

    /// Runs `body` with ``statementTimeout`` set to `timeout`, then restores it: for work that
    /// is allowed to take longer than the serve path's statements (migrations at start-up).
    public func withStatementTimeout<T>(_ timeout: Duration?, _ body: () throws -> T) rethrows -> T {
        let previous = statementTimeout
        statementTimeout = timeout
        defer { statementTimeout = previous }
        return try body()
    }

    /// Runs one statement and returns its rows.
    ///
    /// - Parameter query: SQL with `$n` parameters built by interpolation.
    /// - Returns: The rows (empty for statements that return none) and the affected-row count.
    /// - Throws: ``PostgresError`` mapped from the SQLSTATE, or ``PostgresError/Code/unavailable``
    ///   when the connection is lost.
    @discardableResult
    public func query(_ query: PostgresQuery, file: String = #fileID, line: Int = #line) throws -> PostgresRows {
        PostgresRows(result: try run(query, file: file, line: line))
    }

    /// ``query(_:file:line:)`` with the rows in binary format, each column in its type's send
    /// format (``PostgresRow/isBinary``): for bulk reads, where printing uuids and timestamps as
    /// text is a measurable part of the server's work. Decoding reads the binary forms of text,
    /// `json`, uuid, timestamps, integers and booleans; other types are refused, never misread.
    public func queryBinary(_ query: PostgresQuery, file: String = #fileID, line: Int = #line) throws -> PostgresRows {
        guard implicitTransaction == .none else {
            throw PostgresError(
                code: .other, message: "binary results are not read inside a pipelined transaction", file: file,
                line: line)
        }
        return PostgresRows(
            result: try retryingInvalidatedPlan { try runOnce(query, resultFormat: 1, file: file, line: line) })
    }

    /// Runs one statement and returns how many rows it affected.
    ///
    /// - Throws: ``PostgresError``, as for ``query(_:file:line:)``.
    @discardableResult
    public func execute(_ query: PostgresQuery, file: String = #fileID, line: Int = #line) throws -> Int {
        try run(query, file: file, line: line).affectedRows
    }

    /// Runs a script of several statements (a migration) through the simple query protocol.
    ///
    /// Outside an explicit transaction the server runs the whole script as one implicit
    /// transaction. The script takes no parameters: never build it from input.
    /// - Throws: ``PostgresError`` for the first statement that fails.
    public func execute(unsafeSQL script: String, file: String = #fileID, line: Int = #line) throws {
        guard !Self.containsNUL(script) else {
            throw PostgresError(
                code: .invalidParameter, message: "SQL text contains a NUL byte", file: file, line: line)
        }
        _ = try check(try roundTrip(file: file, line: line) { PQsendQuery(handle, script) }, file: file, line: line)
    }

    /// The command tag of a script's last statement, for transaction control.
    func executeReturningTag(unsafeSQL sql: String) throws -> String {
        try check(try roundTrip(file: #fileID, line: #line) { PQsendQuery(handle, sql) }, file: #fileID, line: #line)
            .commandTag
    }

    private func run(_ query: PostgresQuery, file: String, line: Int) throws -> PostgresResult {
        switch implicitTransaction {
        case .none: break
        case .open: return try runInImplicitTransaction(query, file: file, line: line)
        case .failed: throw PostgresError.rolledBackByFailedStatement(file: file, line: line)
        }
        return try retryingInvalidatedPlan { try runOnce(query, file: file, line: line) }
    }

    /// Runs `attempt`, and once more when it failed because a schema change invalidated a
    /// prepared statement's plan (``PostgresError/isInvalidatedPlan``): the failed statement was
    /// forgotten, so the second attempt prepares it afresh. Only outside a transaction block,
    /// where the failure ended whatever `attempt` had started and nothing of it remains; inside
    /// one the caller's transaction has failed and is the caller's to retry.
    func retryingInvalidatedPlan<T>(_ attempt: () throws -> T) throws -> T {
        do {
            return try attempt()
        } catch let error as PostgresError
            where error.isInvalidatedPlan && implicitTransaction == .none && !mustDiscard && isIdleOutsideTransaction
        {
            logger.debug("postgres statement prepared again after a schema change", ["sqlstate": "0A000"])
            return try attempt()
        }
    }

    /// - Parameter resultFormat: 0 for text results, 1 for binary.
    private func runOnce(
        _ query: PostgresQuery, resultFormat: Int32 = 0, file: String, line: Int
    ) throws -> PostgresResult {
        let bound = try bind(query, file: file, line: line)
        let result = try roundTrip(file: file, line: line) {
            bound.withPointers { pointers, lengths, formats -> Int32 in
                if let name = bound.preparedName {
                    return PQsendQueryPrepared(
                        handle, name, Int32(bound.count), pointers, lengths, formats, resultFormat)
                }
                return PQsendQueryParams(
                    handle, query.sql, Int32(bound.count), bound.types, pointers, lengths, formats, resultFormat)
            }
        }
        do {
            return try check(result, statement: bound.preparedName, file: file, line: line)
        } catch let error as PostgresError {
            forgetInvalidated(bound.preparedName, after: error)
            throw error
        }
    }

    /// After a failure: a plan invalidated by a schema change, or a statement the server no
    /// longer has, is forgotten (and freed when the session can still run commands).
    func forgetInvalidated(_ name: String?, after error: PostgresError) {
        guard let name, error.isInvalidatedPlan || error.sqlState == "26000" else { return }
        prepared = prepared.filter { $0.value != name }
        preparedColumns[name] = nil
        if PQtransactionStatus(handle) == PQTRANS_IDLE { _ = try? executeReturningTag(unsafeSQL: "DEALLOCATE \(name)") }
    }

    /// A query's parameters laid out for libpq, and its prepared statement (prepared now on
    /// first use, so that a pipeline can send it without a synchronous round trip).
    struct BoundQuery {
        var sql: String
        var preparedName: String?
        var types: [Oid] = []
        /// All values in one buffer that outlives the libpq call: text values NUL-terminated,
        /// binary ones with a length.
        var storage: [UInt8] = []
        var offsets: [Int?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        var count: Int { types.count }

        /// Room for `bindings` at once: a request binds dozens of values, and growing five
        /// arrays value by value reallocated each several times.
        mutating func reserveCapacity(_ bindings: [PostgresBinding]) {
            types.reserveCapacity(bindings.count)
            offsets.reserveCapacity(bindings.count)
            lengths.reserveCapacity(bindings.count)
            formats.reserveCapacity(bindings.count)
            var bytes = 1
            for binding in bindings {
                switch binding.value.storage {
                case .null: break
                case .text(let text): bytes += text.utf8.count + 1
                case .binary(let value): bytes += value.count + 1
                }
            }
            storage.reserveCapacity(bytes)
        }

        /// Calls `body` with the value pointers, lengths and formats libpq reads during the call.
        func withPointers<R>(_ body: ([UnsafePointer<CChar>?], [Int32], [Int32]) -> R) -> R {
            storage.withUnsafeBytes { buffer in
                let base = buffer.baseAddress!
                let pointers: [UnsafePointer<CChar>?] = offsets.map { offset in
                    offset.map { (base + $0).assumingMemoryBound(to: CChar.self) }
                }
                return body(pointers, lengths, formats)
            }
        }
    }

    /// - Parameter preparing: Whether a statement not yet prepared on this connection is
    ///   prepared now (a synchronous round trip); without, it is sent unnamed this time.
    func bind(_ query: PostgresQuery, preparing: Bool = true, file: String, line: Int) throws -> BoundQuery {
        let bindings = query.bindings
        guard bindings.count <= Int(UInt16.max) else {
            throw PostgresError(
                code: .invalidParameter, message: "\(bindings.count) parameters exceed the protocol limit of 65535",
                file: file, line: line)
        }
        guard !Self.containsNUL(query.sql) else {
            throw PostgresError(
                code: .invalidParameter, message: "SQL text contains a NUL byte", file: file, line: line)
        }
        var bound = BoundQuery(sql: query.sql)
        bound.reserveCapacity(bindings)
        for (position, binding) in bindings.enumerated() {
            bound.types.append(binding.dataType.rawValue)
            switch binding.value.storage {
            case .null:
                bound.offsets.append(nil)
                bound.lengths.append(0)
                bound.formats.append(0)
            case .text(let text):
                guard !Self.containsNUL(text) else {
                    throw PostgresError(
                        code: .invalidParameter,
                        message: "parameter $\(position + 1) contains a NUL byte, which text cannot hold",
                        file: file, line: line)
                }
                bound.offsets.append(bound.storage.count)
                bound.storage.append(contentsOf: text.utf8)
                bound.storage.append(0)
                bound.lengths.append(0)
                bound.formats.append(0)
            case .binary(let bytes):
                guard bytes.count < Int(Int32.max) else {
                    throw PostgresError(
                        code: .invalidParameter, message: "parameter $\(position + 1) is too large", file: file,
                        line: line)
                }
                bound.offsets.append(bound.storage.count)
                bound.storage.append(contentsOf: bytes)
                bound.storage.append(0)
                bound.lengths.append(Int32(bytes.count))
                bound.formats.append(1)
            }
        }
        bound.storage.append(0)  // never empty, so the buffer always has a base address
        bound.preparedName = try preparedName(
            for: query.sql, types: bound.types, preparing: preparing, file: file, line: line)
        return bound
    }

    /// The name of the prepared statement for `sql` with these parameter types, preparing it on
    /// first use; nil when the cache is full (the statement then runs unprepared).
    private func preparedName(
        for sql: String, types: [Oid], preparing: Bool = true, file: String, line: Int
    ) throws -> String? {
        let key = PreparedKey(sql: sql, types: types)
        if let name = prepared[key] { return name }
        guard preparing, prepared.count < Self.preparedStatementLimit else { return nil }
        preparedCounter += 1
        let name = "issuerd_\(preparedCounter)"
        let result = try roundTrip(file: file, line: line) {
            PQsendPrepare(handle, name, sql, Int32(types.count), types)
        }
        _ = try check(result, file: file, line: line)
        prepared[key] = name
        return name
    }

    /// Prepares a statement that was sent unnamed inside a transaction, for its next use; a
    /// failure only means it stays unprepared.
    func prepareForNextTime(_ query: BoundQuery) {
        _ = try? preparedName(for: query.sql, types: query.types, file: #fileID, line: #line)
    }

    /// A prepared statement is its text and its parameter types.
    ///
    /// Its hash reads the text's length and its last 64 bytes, not the whole text: every
    /// statement is looked up here on every execution, and the largest (a provisioning request's
    /// context, thousands of bytes) cost more to hash in full than to run through libpq. Equal
    /// keys still hash equally; two texts that agree on length and ending only share a bucket.
    struct PreparedKey: Hashable {
        var sql: String
        var types: [Oid]

        func hash(into hasher: inout Hasher) {
            var sql = sql
            sql.withUTF8 { bytes in
                hasher.combine(bytes.count)
                hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(64))))
            }
            hasher.combine(types)
        }
    }

    /// True when `text` holds a NUL byte, which C strings cannot carry; this runs on every
    /// statement's text and value.
    static func containsNUL(_ text: String) -> Bool {
        text.withUTF8Buffer { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return false }
            return memchr(base, 0, bytes.count) != nil
        }
    }

    /// Turns a result into a value or a typed error, freeing failed results.
    ///
    /// - Parameter statement: The prepared statement that made the result: its columns are
    ///   built once and reused.
    func check(_ result: OpaquePointer?, statement: String? = nil, file: String, line: Int) throws -> PostgresResult {
        guard let result else {
            let lost = PQstatus(handle) != CONNECTION_OK
            throw PostgresError(
                code: lost ? .unavailable : .other, message: Self.errorMessage(of: handle), file: file, line: line)
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY {
            guard let statement else { return PostgresResult(owning: result) }
            let known = preparedColumns[statement]
            let checked = PostgresResult(owning: result, columns: known)
            if known !== checked.columns { preparedColumns[statement] = checked.columns }
            return checked
        }
        defer { PQclear(result) }
        let sqlState = Self.field(result, "C")
        var code = sqlState.map(PostgresError.code(forSQLState:)) ?? .other
        // A lost connection shows as a result without SQLSTATE (or 57P01) and a bad status.
        if PQstatus(handle) != CONNECTION_OK { code = .unavailable }
        if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
            throw PostgresError(
                code: .other, message: "COPY is not supported on this connection", file: file, line: line)
        }
        let primary = Self.field(result, "M") ?? Self.errorMessage(of: handle)
        logger.debug(
            "postgres statement failed", ["sqlstate": .string(sqlState ?? "none"), "code": .string(code.name)])
        throw PostgresError(
            code: code, sqlState: sqlState, message: PostgresError.safeMessage(primary, sqlState: sqlState),
            detail: Self.field(result, "D"), constraint: Self.field(result, "n"), context: Self.field(result, "W"),
            file: file,
            line: line)
    }

    /// One `PQresultErrorField`; the field codes are the protocol's one-letter tags
    /// (PostgreSQL manual 55.8), which do not import from `postgres_ext.h`.
    private static func field(_ result: OpaquePointer, _ tag: Unicode.Scalar) -> String? {
        PQresultErrorField(result, Int32(tag.value)).map { String(cString: $0) }
    }

    static func errorMessage(of handle: OpaquePointer) -> String {
        let message = PQerrorMessage(handle).map { String(cString: $0) } ?? ""
        // libpq writes multi-line messages with a tab-indented hint; keep log lines single.
        let lines = message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        return lines.isEmpty ? "connection failed" : lines.joined(separator: " ")
    }
}
