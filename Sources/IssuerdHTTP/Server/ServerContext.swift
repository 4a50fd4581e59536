import CMicroHTTPD
import Glibc
import IssuerdCore

/// Everything libmicrohttpd's callbacks need, shared by all worker threads.
///
/// Immutable after init except the in-flight count, the handoffs and the library log's throttle,
/// which are behind a `Lock` each.
final class ServerContext: Sendable {
    let router: Router
    let logger: Logger
    let bodyLimit: Int
    /// Where route handlers run (every route but the inline ones, see ``Router/add(_:_:inline:_:)``).
    let handlers: HandlerThreads
    /// The head and body deadlines of every open connection.
    let deadlines: ConnectionDeadlines
    private let requestsTotal: Counter
    private let requestDuration: Histogram
    private let refusedTotal: Counter
    // Requests whose headers arrived and whose completion has not fired; shutdown waits on it.
    private let inFlightCount = Lock(0)
    // Guarded by Lock: requests whose handler runs (their connections suspended), and whether
    // shutdown has abandoned them (no handoff starts after that).
    private let handoffs = Lock((open: [ObjectIdentifier: Handoff](), closed: false))
    // Guarded by Lock: the streamed bodies being sent, closed by shutdown.
    private let streams = Lock([ObjectIdentifier: StreamedBody]())
    // Guarded by Lock: libmicrohttpd lines logged in the current window, and those left out.
    private let libraryLog = Lock((windowStart: ContinuousClock.now, logged: 0, suppressed: 0))

    init(
        router: Router, logger: Logger, metrics: MetricsRegistry, bodyLimit: Int, handlerThreads: Int,
        limits: HTTPServerLimits
    ) {
        self.router = router
        self.logger = logger
        self.bodyLimit = bodyLimit
        self.handlers = HandlerThreads(count: handlerThreads)
        self.deadlines = ConnectionDeadlines(
            headTimeout: limits.headTimeout, bodyTimeout: limits.bodyTimeout, metrics: metrics)
        self.refusedTotal = metrics.counter(
            "issuerd_http_connections_refused_total",
            help: "Connections closed as soon as accepted: over the total or the per-address limit.")
        self.requestsTotal = metrics.counter(
            "issuerd_http_requests_total", help: "HTTP requests by route pattern, method and status.",
            labels: ["route", "method", "status"])
        self.requestDuration = metrics.histogram(
            "issuerd_http_request_duration_seconds", help: "Time from request headers to queued response, by route.",
            labels: ["route"], buckets: Histogram.latencyBuckets)
    }

    /// Requests begun and not yet completed.
    var inFlight: Int { inFlightCount.withLock { $0 } }

    /// One call of the access handler. libmicrohttpd calls it several times per request: first
    /// with the headers only (no per-request state yet: it is made, the head checked), then once
    /// per body chunk (appended, the chunk marked consumed), then with no data: the answer, or
    /// again once a handler thread resumed the connection with it.
    func handle(
        connection: OpaquePointer,
        url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>,
        slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        let connectionID = Self.connectionID(connection)
        guard let raw = slot.pointee, raw != RequestFraming.badTargetMarker else {
            // A connection the deadline watcher shut down is not served.
            guard deadlines.headReceived(connectionID) else { return .NO }
            let badTarget = slot.pointee == RequestFraming.badTargetMarker
            return begin(
                connection: connection, url: url, method: method, version: version, slot: slot, badTarget: badTarget)
        }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
        let size = uploadSize.pointee
        if size > 0 {
            uploadSize.pointee = 0
            return receive(UnsafeRawBufferPointer(start: uploadData, count: size), into: state, connection: connection)
        }
        if state.responded { return .YES }
        if let handoff = state.handoff {
            // Called again after the handler thread resumed the connection.
            switch handoff.take() {
            case nil:
                return .YES
            case .answered(let response, let route):
                forget(handoff)
                return queue(response, route: route, state: state, connection: connection)
            case .abandoned:
                return .NO
            }
        }
        guard deadlines.handling(connectionID) else { return .NO }
        if let rejection = state.rejection {
            return queue(rejection.response, route: rejection.route, state: state, connection: connection)
        }
        return finish(state: state, connection: connection)
    }

    /// First call: headers only. Allocates the request state; answers at once a head whose
    /// framing cannot be trusted; and for a request with a body, decides on the head alone what
    /// it can (no such route, the route's credential missing, a declared length over the limit):
    /// such a request is answered at once or after its body has been discarded unread.
    private func begin(
        connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?, slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>, badTarget: Bool
    ) -> MHD_Result {
        let requestId = RequestIdentifier.resolve(Self.header(connection, RequestIdentifier.headerName))
        let state = RequestState(
            requestId: requestId, trace: TraceContext.resolve(Self.header(connection, TraceContext.headerName)),
            methodToken: method.map { String(cString: $0) } ?? "",
            path: url.map { String(cString: $0) } ?? "/")
        slot.pointee = Unmanaged.passRetained(state).toOpaque()
        inFlightCount.withLock { $0 += 1 }
        if let problem =
            badTarget
            ? "a space or a control character in the request target"
            : RequestFraming.problem(connection: connection, method: method, version: version)
        {
            _ = deadlines.handling(Self.connectionID(connection))
            return queue(
                HTTPError.malformedRequest(problem).response(), route: nil, state: state, connection: connection)
        }
        // libmicrohttpd has already refused a malformed Content-Length with 400.
        let length = Self.header(connection, "Content-Length").flatMap { UInt64($0) }
        let chunked = Self.header(connection, "Transfer-Encoding") != nil
        if (length ?? 0) > 0 || chunked, let method = HTTPMethod(rawValue: state.methodToken) {
            let head = HTTPRequest(
                method: method, path: state.path, query: Self.query(connection),
                headers: HTTPHeaders(Self.pairs(connection, .HEADER_KIND)), requestId: requestId,
                remoteAddress: Self.remoteAddress(connection), logger: logger, trace: state.trace)
            state.head = head
            (state.rejection, state.admitted, state.resolved) = router.admission(head)
        }
        if state.rejection == nil, let length, length > UInt64(bodyLimit) {
            state.rejection = (HTTPError.payloadTooLarge(limit: bodyLimit).response(), nil)
        }
        guard let rejection = state.rejection else { return .YES }
        // A client that sent `Expect: 100-continue` has not sent its body: answer now, and
        // libmicrohttpd never asks for it (RFC 9110 section 10.1.1). A client already sending
        // would see its writes fail against a closed connection and might never read the answer
        // (RFC 9112 section 9.6), so a body within the discard allowance is read and dropped
        // first and answered at its end, as a chunked one is.
        let expectsContinue = Self.header(connection, "Expect")?.lowercased() == "100-continue"
        if expectsContinue || (length ?? 0) > UInt64(bodyLimit + Self.discardAllowance) {
            _ = deadlines.handling(Self.connectionID(connection))
            return queue(rejection.response, route: rejection.route, state: state, connection: connection)
        }
        return .YES
    }

    /// A body chunk. Over the limit (a chunked body has no Content-Length to check up front)
    /// the body is dropped and the rest discarded, up to a bound past which the connection is
    /// cut rather than read forever.
    private func receive(
        _ chunk: UnsafeRawBufferPointer, into state: RequestState, connection: OpaquePointer
    ) -> MHD_Result {
        state.bytesIn += chunk.count
        if state.responded || state.rejection != nil {
            return state.bytesIn > bodyLimit + Self.discardAllowance ? .NO : .YES
        }
        guard state.body.count + chunk.count <= bodyLimit else {
            state.rejection = (HTTPError.payloadTooLarge(limit: bodyLimit).response(), nil)
            state.body = []
            return .YES
        }
        state.body.append(contentsOf: chunk)
        return .YES
    }

    /// How many bytes past the limit are read and discarded so the client still gets its 413.
    static let discardAllowance = 1 << 20

    /// Last call: the whole request is here. Builds it, routes it, queues the answer.
    private func finish(state: RequestState, connection: OpaquePointer) -> MHD_Result {
        guard let method = HTTPMethod(rawValue: state.methodToken) else {
            return queue(HTTPError.notImplemented().response(), route: nil, state: state, connection: connection)
        }
        // The head's headers, query and address as admission read them, when it did.
        var request = HTTPRequest(
            method: method, path: state.path, query: state.head?.query ?? Self.query(connection),
            headers: state.head?.headers ?? HTTPHeaders(Self.pairs(connection, .HEADER_KIND)), body: state.body,
            requestId: state.requestId,
            remoteAddress: state.head.map(\.remoteAddress) ?? Self.remoteAddress(connection), logger: logger,
            receivedAt: .now, trace: state.trace)
        request.admitted = state.admitted
        state.body = []
        if router.runsInline(method, path: state.path) {
            let (response, route) = TraceContext.run(state.trace) {
                self.router.dispatch(request, resolved: state.resolved)
            }
            return queue(response, route: route, state: state, connection: connection)
        }
        // Off this network thread: the connection waits suspended while a handler thread runs
        // the route, so this thread keeps serving every other connection meanwhile.
        let handoff = Handoff(connection: connection)
        let accepted = handoffs.withLock { handoffs in
            guard !handoffs.closed else { return false }
            handoffs.open[ObjectIdentifier(handoff)] = handoff
            return true
        }
        guard accepted else { return .NO }  // stopping: close, as the daemon's stop would
        state.handoff = handoff
        MHD_suspend_connection(connection)
        let router = router
        let handed = request
        let resolved = state.resolved
        handlers.submit {
            // The handler thread works for this request: its log lines and outbound calls carry its trace.
            let (response, route) = TraceContext.run(handed.trace) { router.dispatch(handed, resolved: resolved) }
            handoff.settle(.answered(response, route: route))
        }
        return .YES
    }

    private func forget(_ handoff: Handoff) {
        _ = handoffs.withLock { $0.open.removeValue(forKey: ObjectIdentifier(handoff)) }
    }

    /// For shutdown, once in-flight requests had their time: every request whose handler still
    /// runs has its connection resumed and closed without an answer (libmicrohttpd must not be
    /// stopped with a connection suspended), and no new handoff starts.
    ///
    /// - Returns: How many were abandoned.
    func abandonHandoffs() -> Int {
        let open = handoffs.withLock { handoffs in
            handoffs.closed = true
            defer { handoffs.open.removeAll() }
            return Array(handoffs.open.values)
        }
        for handoff in open { handoff.settle(.abandoned) }
        // A streamed body still being sent ends with an error (its connection resumed if it
        // waited for rows), and its producer stops at its next write.
        let sending = streams.withLock { Array($0.values) }
        for body in sending { body.close() }
        return open.count + sending.count
    }

    /// libmicrohttpd freed the response sending `body`.
    func streamEnded(_ body: StreamedBody) {
        _ = streams.withLock { $0.removeValue(forKey: ObjectIdentifier(body)) }
    }

    /// Creates the C response of a streamed body, and once it exists hands the body's producer
    /// to a handler thread.
    private func streamedResponse(
        _ body: StreamedBody, connection: OpaquePointer, requestId: String
    )
        -> OpaquePointer?
    {
        let reader = Unmanaged.passRetained(StreamedResponse(body: body, context: self))
        // libmicrohttpd asks for at most 64 KiB at a time; MHD_SIZE_UNKNOWN: chunked.
        guard
            let response = MHD_create_response_from_callback(
                UInt64.max, 64 * 1024, streamReaderCallback, reader.toOpaque(), streamFreeCallback)
        else {
            reader.release()
            return nil
        }
        body.attach(connection)
        streams.withLock { $0[ObjectIdentifier(body)] = body }
        let logger = logger
        handlers.submit {
            let (end, error) = body.run()
            if let error {
                logger.error(
                    "streamed response failed",
                    [
                        "requestId": .string(requestId), "bytesOut": .int(body.written),
                        "error": .string(String(describing: error)),
                    ])
            } else {
                logger.info(
                    "streamed response written",
                    [
                        "requestId": .string(requestId), "bytesOut": .int(body.written),
                        "complete": .bool(end == .finished),
                    ])
            }
        }
        return response
    }

    /// Hands a response to libmicrohttpd, then writes the access-log line and metrics.
    ///
    /// Both happen before the handler returns, so they are recorded before the first response
    /// byte reaches the client.
    private func queue(
        _ response: HTTPResponse, route: String?, state: RequestState, connection: OpaquePointer
    ) -> MHD_Result {
        state.responded = true
        var status = response.status
        if !(100...599).contains(status) {
            logger.error(
                "handler returned an invalid status", ["status": .int(status), "requestId": .string(state.requestId)])
            status = 500
        }
        let queued = response.body.withUnsafeBytes { bytes -> MHD_Result in
            // MUST_COPY: the Swift array does not outlive this call, the C response must.
            let created =
                if let streamed = response.streamed {
                    streamedResponse(streamed, connection: connection, requestId: state.requestId)
                } else {
                    MHD_create_response_from_buffer(
                        bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
                }
            guard let mhdResponse = created else { return .NO }
            defer { MHD_destroy_response(mhdResponse) }
            var headers = response.headers
            headers.set(RequestIdentifier.headerName, state.requestId)
            headers.set(TraceContext.headerName, state.trace.traceparent)
            // libmicrohttpd computes Content-Length from the buffer (and for HEAD) itself.
            for field in headers where !HTTPHeaders.namesMatch(field.name, "Content-Length") {
                if MHD_add_response_header(mhdResponse, field.name, field.value) != .YES {
                    logger.warning(
                        "response header refused",
                        ["header": .string(field.name), "requestId": .string(state.requestId)])
                }
            }
            return MHD_queue_response(connection, UInt32(status), mhdResponse)
        }
        record(
            status: status, route: route, bytesOut: response.body.count, state: state,
            connection: connection)
        return queued
    }

    private func record(status: Int, route: String?, bytesOut: Int, state: RequestState, connection: OpaquePointer) {
        let seconds = (ContinuousClock.now - state.startedAt).timeInterval
        let routeLabel = route ?? "unmatched"
        let methodLabel = HTTPMethod(rawValue: state.methodToken)?.rawValue ?? "other"
        requestsTotal.increment(labels: [routeLabel, methodLabel, String(status)])
        requestDuration.observe(seconds, labels: [routeLabel])
        logger.info(
            "request",
            [
                "method": .string(methodLabel),
                "route": .string(routeLabel),
                // A card number in a path (a mistaken or probing request) is never written.
                "path": .string(CardNumberText.masked(state.path)),
                "status": .int(status),
                "durationMs": .double((seconds * 1_000_000).rounded() / 1_000),
                "requestId": .string(state.requestId),
                "traceId": .string(state.trace.traceID),
                "bytesIn": .int(state.bytesIn),
                "bytesOut": .int(bytesOut),
                "remote": .string(Self.remoteAddress(connection) ?? "-"),
            ])
    }

    /// Completion: releases the state retained in ``begin``; also fires for aborted requests.
    func complete(
        connection: OpaquePointer?, slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>,
        termination: MHD_RequestTerminationCode
    ) {
        if let connection { deadlines.answered(Self.connectionID(connection)) }
        guard let raw = slot.pointee, raw != RequestFraming.badTargetMarker else {
            slot.pointee = nil
            return
        }
        slot.pointee = nil
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
        inFlightCount.withLock { $0 -= 1 }
        // Settled by now (a suspended connection does not complete); one whose answer was never
        // taken (the connection failed on resuming) must not stay registered.
        if let handoff = state.handoff { forget(handoff) }
        if !state.responded {
            logger.debug(
                "request aborted",
                [
                    "requestId": .string(state.requestId), "path": .string(CardNumberText.masked(state.path)),
                    "termination": .int(Int(termination.rawValue)), "bytesIn": .int(state.bytesIn),
                ])
        }
    }

    /// A line of libmicrohttpd's own diagnostics. Most follow from what clients send (a refused
    /// connection, a malformed request), so a client must not be able to flood the log with
    /// them: at most 20 lines per minute, then one line saying how many were left out. Refused
    /// connections are counted in `issuerd_http_connections_refused_total` as well.
    func libraryMessage(_ text: String) {
        if text.hasPrefix("Server reached connection limit") { refusedTotal.increment() }
        let now = ContinuousClock.now
        let (log, suppressed) = libraryLog.withLock { window -> (Bool, Int) in
            var suppressed = 0
            if now - window.windowStart > .seconds(60) {
                suppressed = window.suppressed
                window = (now, 0, 0)
            }
            guard window.logged < 20 else {
                window.suppressed += 1
                return (false, suppressed)
            }
            window.logged += 1
            return (true, suppressed)
        }
        if suppressed > 0 { logger.warning("libmicrohttpd lines left out", ["count": .int(suppressed)]) }
        if log { logger.warning("libmicrohttpd: " + CardNumberText.masked(text)) }
    }

}
