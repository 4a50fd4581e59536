import CMicroHTTPD
import IssuerdCore

/// Owns one running libmicrohttpd daemon: EPOLL internal thread plus a worker pool on a socket
/// bound by ``ListeningSocket``.
///
/// This is the only place that starts and stops the C daemon; the callbacks it registers
/// live in `MicroHTTPDCallbacks.swift` and reach Swift through the ``ServerContext`` pointer.
final class MicroHTTPDaemon: @unchecked Sendable {
    // @unchecked Sendable: `handle` is only used by HTTPServer under its state lock, and freed once in stop().
    private var handle: OpaquePointer?

    /// Starts the daemon.
    ///
    /// - Parameters:
    ///   - socket: A listening, non-blocking socket the daemon accepts on (it does not close it).
    ///   - configuration: Thread count, connection limits and the idle timeout.
    ///   - context: Passed to every callback; the caller keeps it alive until ``stop()`` returns.
    /// - Throws: ``HTTPServerError`` `daemon_failed` when libmicrohttpd refuses the options.
    init(socket: ListeningSocket, configuration: HTTPServerConfiguration, context: ServerContext) throws {
        let contextPointer = Unmanaged.passUnretained(context).toOpaque()
        let limits = configuration.limits
        // MHD_USE_ITC lets MHD_quiesce_daemon wake the pool's threads (microhttpd.h says
        // quiescing "some thread modes" requires it) and a resumed connection be served at once;
        // MHD_ALLOW_SUSPEND_RESUME lets a connection wait while its handler runs on another
        // thread (ServerContext); MHD_USE_ERROR_LOG routes the library's own diagnostics to the
        // external logger below instead of losing them.
        let flags =
            MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_USE_ITC.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ERROR_LOG.rawValue
        var options: [MHD_OptionItem] = [
            // First, or libmicrohttpd prints what it finds while parsing the others to stderr.
            // Two-pointer options carry the function in `value` and its context in `ptr_value`.
            MHD_OptionItem(
                option: .EXTERNAL_LOGGER, value: unsafeBitCast(daemonLogCallback, to: Int.self),
                ptr_value: contextPointer),
            MHD_OptionItem(option: .LISTEN_SOCKET, value: Int(socket.descriptor), ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_TIMEOUT, value: limits.idleTimeout, ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_LIMIT, value: limits.maxConnections, ptr_value: nil),
            MHD_OptionItem(option: .PER_IP_CONNECTION_LIMIT, value: limits.maxConnectionsPerAddress, ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_MEMORY_LIMIT, value: limits.connectionMemory, ptr_value: nil),
            // 0: libmicrohttpd 0.9.75 sends the head of its own 400 twice (the second inside the
            // counted body) when it refuses a head after parsing it, as strict mode (1) does an
            // HTTP/1.1 request without Host; RequestFraming refuses those, and a space inside the
            // request target, with one answer of issuerd's own (RFC 9112 sections 3.2 and 3).
            MHD_OptionItem(option: .STRICT_FOR_CLIENT, value: 0, ptr_value: nil),
            MHD_OptionItem(
                option: .URI_LOG_CALLBACK, value: unsafeBitCast(requestTargetCallback, to: Int.self), ptr_value: nil),
            MHD_OptionItem(
                option: .NOTIFY_COMPLETED, value: unsafeBitCast(requestCompletedCallback, to: Int.self),
                ptr_value: contextPointer),
            MHD_OptionItem(
                option: .NOTIFY_CONNECTION, value: unsafeBitCast(connectionNotifyCallback, to: Int.self),
                ptr_value: contextPointer),
        ]
        // A pool of one is refused by libmicrohttpd ("greater than 1" enables pooling): one
        // thread is the internal polling thread alone.
        let networkThreads = configuration.effectiveNetworkThreadCount
        if networkThreads > 1 {
            options.append(MHD_OptionItem(option: .THREAD_POOL_SIZE, value: networkThreads, ptr_value: nil))
        }
        options.append(MHD_OptionItem(option: .END, value: 0, ptr_value: nil))
        let started: OpaquePointer? = options.withUnsafeMutableBufferPointer { items in
            // MHD_start_daemon is variadic; Swift reaches it through the va_list twin and an option array.
            withVaList([MHD_OPTION.ARRAY.rawValue, items.baseAddress!, MHD_OPTION.END.rawValue]) { arguments in
                MHD_start_daemon_va(flags, 0, nil, nil, accessHandlerCallback, contextPointer, arguments)
            }
        }
        guard let started else {
            throw HTTPServerError(
                .daemonFailed, "libmicrohttpd refused to start (see the preceding libmicrohttpd log line)")
        }
        handle = started
    }

    /// Stops accepting new connections; requests already on open connections continue.
    func quiesce() {
        guard let handle else { return }
        _ = MHD_quiesce_daemon(handle)
    }

    /// Stops the daemon: joins its threads and closes every connection. Idempotent.
    func stop() {
        guard let handle else { return }
        MHD_stop_daemon(handle)
        self.handle = nil
    }

    deinit {
        stop()
    }
}
