import CPostgres
import Foundation

extension PostgresConnection {
    /// True while libpq still considers the connection established and no statement on it was
    /// abandoned (``statementTimeout``).
    public var isConnected: Bool { !abandoned && PQstatus(handle) == CONNECTION_OK }

    /// True when the connection is established and outside any transaction.
    var isIdleOutsideTransaction: Bool { isConnected && PQtransactionStatus(handle) == PQTRANS_IDLE }

    /// Readies a returned connection for the next borrower.
    ///
    /// - Returns: false when the connection must be discarded: lost, stuck mid-statement
    ///   (COPY), or left in a transaction that would not roll back.
    func prepareForReuse() -> Bool {
        guard isConnected, !mustDiscard else { return false }
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE:
            return true
        case PQTRANS_INTRANS, PQTRANS_INERROR:
            rollbackQuietly()
            return isIdleOutsideTransaction
        default:
            return false
        }
    }

    /// Checks a connection that sat idle in the pool without a round trip.
    ///
    /// An idle session receives nothing unless the server is ending it: a shutdown sends a
    /// FATAL 57P01 and closes the socket, which libpq notices only at the next statement. Any
    /// readable byte or hang-up therefore marks the connection as dead (we never LISTEN, and
    /// the rare asynchronous ParameterStatus costs one reconnect).
    /// - Returns: true when the connection can be handed out.
    func isHealthyWhileIdle() -> Bool {
        guard isIdleOutsideTransaction else { return false }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 0
    }

    /// The server process serving this connection, for logs and `pg_terminate_backend`.
    public var backendProcessID: Int32 { PQbackendPID(handle) }
}

extension PostgresConnection {
    /// The value libpq uses for a connection option (`keepalives_idle`, `tcp_user_timeout`, …),
    /// after defaults, this module's settings and the connection string are combined; `nil`
    /// when unset. Never asked for `password`: it answers `nil` for it.
    public func connectionOption(_ keyword: String) -> String? {
        guard keyword != "password", let options = PQconninfo(handle) else { return nil }
        defer { PQconninfoFree(options) }
        var option = options
        while let name = option.pointee.keyword {
            if String(cString: name) == keyword { return option.pointee.val.map { String(cString: $0) } }
            option += 1
        }
        return nil
    }
}
