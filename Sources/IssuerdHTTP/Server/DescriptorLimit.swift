import Glibc

/// The process's open-file limit, checked against the connections the server may hold: a
/// connection the kernel lets the server accept but no descriptor is left for fails in
/// `accept(2)` with `EMFILE`, for every client alike.
enum DescriptorLimit {
    /// Descriptors kept for what is not a connection: the database pool, the listening socket,
    /// libmicrohttpd's epoll and wake-up descriptors, log and rules files.
    static let reserve = 64

    /// Raises the soft limit up to the hard one when `room` needs it.
    ///
    /// - Throws: ``HTTPServerError`` `invalid_configuration` when even the hard limit is short,
    ///   naming both numbers (raise `LimitNOFILE`, or lower the connection limit).
    static func ensure(room: Int) throws {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let needed = rlim_t(room)
        if limit.rlim_cur >= needed { return }
        if limit.rlim_max >= needed || limit.rlim_max == rlim_t.max {
            var raised = limit
            raised.rlim_cur = needed
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return }
        }
        throw HTTPServerError(
            .invalidConfiguration,
            "the connection limit needs \(room) file descriptors (\(reserve) of them kept for other files) but "
                + "the process may open \(limit.rlim_max); raise LimitNOFILE or lower ISSUERD_HTTP_MAX_CONNECTIONS")
    }
}
