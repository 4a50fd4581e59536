import CPostgres
import Foundation
import IssuerdCore

/// Every wait for the server, bounded by a deadline.
///
/// The connection runs in libpq's non-blocking mode: statements are sent with `PQsend…`, the
/// send buffer is flushed and the answers are read with `poll()` on the connection's socket, so
/// a wait ends at the deadline even when the server never answers. A server that stops without
/// closing its connections (a stopped process, a paused VM, a storage stall) keeps its sockets
/// open and its kernel acknowledges, so neither keepalives nor `tcp_user_timeout` notice it:
/// only a deadline does.
extension PostgresConnection {
    /// When a round trip that starts now must be answered; nil without a statement timeout.
    func roundTripDeadline() -> ContinuousClock.Instant? {
        statementTimeout.map { ContinuousClock.now + $0 }
    }

    /// Refuses a statement on a connection that was abandoned: the server may still be running
    /// (or about to commit) what it had received, so nothing more goes on this session.
    func refuseIfAbandoned(file: String, line: Int) throws {
        guard abandoned else { return }
        throw PostgresError(
            code: .timedOut, message: "the connection was closed after a statement got no answer in time", file: file,
            line: line)
    }

    /// Sends everything libpq holds for the server, waiting for the socket until `deadline`.
    func flushOutput(until deadline: ContinuousClock.Instant?, file: String, line: Int) throws {
        PostgresRoundTrips.count()
        while true {
            switch PQflush(handle) {
            case 0:
                return
            case 1:
                // libpq's advice: wait for read or write; read what arrived (the server may be
                // sending while it waits for us to read), then flush again.
                let events = try waitForSocket(Int16(POLLIN | POLLOUT), until: deadline, file: file, line: line)
                if events & Int16(POLLIN) != 0, PQconsumeInput(handle) != 1 {
                    throw connectionFailure(file: file, line: line)
                }
            default:
                throw connectionFailure(file: file, line: line)
            }
        }
    }

    /// The next result, as `PQgetResult` returns it, but never waiting past `deadline`.
    ///
    /// - Returns: nil where `PQgetResult` returns NULL (the end of a statement's results).
    /// - Throws: ``PostgresError/Code/timedOut`` past the deadline (the connection is then
    ///   abandoned).
    func nextResult(until deadline: ContinuousClock.Instant?, file: String, line: Int) throws -> OpaquePointer? {
        while PQisBusy(handle) == 1 {
            _ = try waitForSocket(Int16(POLLIN), until: deadline, file: file, line: line)
            // A read failure leaves the connection broken: `PQgetResult` then reports it as an
            // error result at once, without waiting.
            if PQconsumeInput(handle) != 1 {
                guard isConnected else { break }
                throw connectionFailure(file: file, line: line)
            }
        }
        return PQgetResult(handle)
    }

    /// Reads every result of the statement just sent and returns what `PQexec` would: the last
    /// one, or the first error (the server runs nothing after it), stopping at a COPY state.
    func finalResult(until deadline: ContinuousClock.Instant?, file: String, line: Int) throws -> OpaquePointer? {
        var last: OpaquePointer?
        do {
            while let result = try nextResult(until: deadline, file: file, line: line) {
                if let kept = last, PQresultStatus(kept) == PGRES_FATAL_ERROR {
                    PQclear(result)
                    continue
                }
                if let kept = last { PQclear(kept) }
                last = result
                let status = PQresultStatus(result)
                if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH { break }
            }
        } catch {
            if let last { PQclear(last) }
            throw error
        }
        return last
    }

    /// Sends what `send` queued and returns the statement's result (nil when `send` failed, for
    /// ``check(_:statement:file:line:)`` to report libpq's message).
    func roundTrip(file: String, line: Int, _ send: () -> Int32) throws -> OpaquePointer? {
        try refuseIfAbandoned(file: file, line: line)
        let deadline = roundTripDeadline()
        guard send() == 1 else { return nil }
        try flushOutput(until: deadline, file: file, line: line)
        return try finalResult(until: deadline, file: file, line: line)
    }

    /// Waits until the socket is ready for `events` (poll flags).
    ///
    /// - Returns: The events that occurred.
    /// - Throws: ``PostgresError/Code/timedOut`` at the deadline, after abandoning the
    ///   connection (``abandon(file:line:)``).
    func waitForSocket(
        _ events: Int16, until deadline: ContinuousClock.Instant?, file: String, line: Int
    ) throws -> Int16 {
        switch Self.waitForSocket(PQsocket(handle), events, until: deadline) {
        case .ready(let occurred): return occurred
        case .timedOut: throw abandon(file: file, line: line)
        case .failed: throw connectionFailure(file: file, line: line)
        }
    }

    enum SocketWait {
        case ready(Int16)
        case timedOut, failed
    }

    /// `poll()` on one descriptor until `deadline` (nil: no limit).
    static func waitForSocket(_ socket: Int32, _ events: Int16, until deadline: ContinuousClock.Instant?) -> SocketWait
    {
        guard socket >= 0 else { return .failed }
        while true {
            var timeout: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return .timedOut }
                let (seconds, attoseconds) = left.components
                // Rounded up, so that a wait never ends just before the deadline and spins.
                let milliseconds = seconds * 1_000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
                timeout = Int32(clamping: milliseconds)
            }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, timeout)
            if ready > 0 {
                // A hang-up or an error is for libpq to read and report.
                return .ready(descriptor.revents)
            }
            if ready < 0, errno != EINTR { return .failed }
        }
    }

    /// Gives the connection up after a deadline passed: a cancel request goes to the server in
    /// the background (bounded; see ``PostgresCancellation``), the connection takes no further
    /// statement and the pool closes it instead of lending it again, and the calling request
    /// (``PostgresRequestScope``) stops waiting for the database.
    func abandon(file: String, line: Int) -> PostgresError {
        if !abandoned {
            abandoned = true
            mustDiscard = true
            PostgresCancellation.request(handle, logger: logger)
            PostgresRequestScope.current?.gaveUp = true
            logger.warning(
                "postgres statement abandoned",
                [
                    "backend_pid": .int(Int(PQbackendPID(handle))),
                    "timeout_ms": .int(Int((statementTimeout?.timeInterval ?? 0) * 1_000)),
                ])
        }
        let limit = statementTimeout.map { "\($0)" } ?? "its deadline"
        return PostgresError(
            code: .timedOut, message: "the database did not answer within \(limit)", file: file, line: line)
    }

    func connectionFailure(file: String, line: Int) -> PostgresError {
        PostgresError(
            code: isConnected ? .other : .unavailable, message: Self.errorMessage(of: handle), file: file, line: line)
    }
}

/// Cancel requests for abandoned statements, each on a short-lived thread of its own.
///
/// libpq's `PQcancel` opens a new connection to the server and waits until the server closed
/// it; a server that stopped answering answers that late too (a stopped postmaster accepts
/// nothing until it resumes). So the request never blocks the caller, and at most
/// ``limit`` are in flight: beyond, the statement is left to end when the backend finds its
/// client gone (it reads the closed socket after its statement).
enum PostgresCancellation {
    static let limit = 16
    private static let inFlight = Lock(0)

    /// A `PGcancel` freed when the last reference goes; used by one thread at a time.
    private final class Handle: @unchecked Sendable {
        // @unchecked Sendable: the pointer is handed to exactly one thread and freed once.
        let pointer: OpaquePointer
        init(_ pointer: OpaquePointer) { self.pointer = pointer }
        deinit { PQfreeCancel(pointer) }
    }

    /// Asks the server to cancel what `connection` runs, without waiting for the answer.
    static func request(_ connection: OpaquePointer, logger: Logger) {
        guard let pointer = PQgetCancel(connection) else { return }
        let cancel = Handle(pointer)
        let admitted = inFlight.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
        guard admitted else {
            logger.notice("postgres cancel request skipped", ["in_flight": .int(limit)])
            return
        }
        let thread = Thread {
            var message = [CChar](repeating: 0, count: 256)
            let sent = PQcancel(cancel.pointer, &message, Int32(message.count))
            if sent != 1 {
                let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                logger.notice("postgres cancel request failed", ["error": .string(text)])
            }
            inFlight.withLock { $0 -= 1 }
        }
        thread.name = "issuerd-pg-cancel"
        thread.start()
    }

    /// Cancel requests sent and not yet answered, for tests.
    static var pending: Int { inFlight.withLock { $0 } }
}
