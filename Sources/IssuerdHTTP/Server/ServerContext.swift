import CMicroHTTPD
import Glibc
import IssuerdCore
import Synchronization

/// Everything libmicrohttpd's callbacks need, shared by all worker threads.
///
/// Immutable after init except the in-flight count and the handoffs, which are behind `Mutex`es.
final class ServerContext: Sendable {
    let router: Router
    let logger: Logger
    let bodyLimit: Int
    /// Where route handlers run (every route but the inline ones, see ``Router/add(_:_:inline:_:)``).
    let handlers: HandlerThreads
    private let requestsTotal: Counter
    private let requestDuration: Histogram
    // Requests whose headers arrived and whose completion has not fired; shutdown waits on it.
    private let inFlightCount = Mutex(0)
    // Guarded by Mutex: requests whose handler runs (their connections suspended), and whether
    // shutdown has abandoned them (no handoff starts after that).
    private let handoffs = Mutex((open: [ObjectIdentifier: Handoff](), closed: false))

    init(router: Router, logger: Logger, metrics: MetricsRegistry, bodyLimit: Int, handlerThreads: Int) {
        self.router = router
        self.logger = logger
        self.bodyLimit = bodyLimit
        self.handlers = HandlerThreads(count: handlerThreads)
        self.requestsTotal = metrics.counter(
            "issuerd_http_requests_total", help: "HTTP requests by route pattern, method and status.",
            labels: ["route", "method", "status"])
        self.requestDuration = metrics.histogram(
            "issuerd_http_request_duration_seconds", help: "Time from request headers to queued response, by route.",
            labels: ["route"], buckets: Histogram.latencyBuckets)
    }

    /// Requests begun and not yet completed.
    var inFlight: Int { inFlightCount.withLock { $0 } }

    /// One call of the access handler; see platform-notes.md for libmicrohttpd's call sequence.
    func handle(
        connection: OpaquePointer,
        url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>,
        slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = slot.pointee else {
            return begin(connection: connection, url: url, method: method, slot: slot)
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
        if let rejection = state.rejection {
            return queue(rejection.response(), route: nil, state: state, connection: connection)
        }
        return finish(state: state, connection: connection)
    }

    /// First call: headers only. Allocates the request state and notes a declared
    /// `Content-Length` over the limit (answered at once, or after discarding the body).
    private func begin(
        connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        let requestId = RequestIdentifier.resolve(Self.header(connection, RequestIdentifier.headerName))
        let state = RequestState(
            requestId: requestId,
            methodToken: method.map { String(cString: $0) } ?? "",
            path: url.map { String(cString: $0) } ?? "/")
        slot.pointee = Unmanaged.passRetained(state).toOpaque()
        inFlightCount.withLock { $0 += 1 }
        // libmicrohttpd has already refused a malformed Content-Length with 400.
        if let declared = Self.header(connection, "Content-Length"), let length = UInt64(declared),
            length > UInt64(bodyLimit)
        {
            state.rejection = .payloadTooLarge(limit: bodyLimit)
            // A client that sent `Expect: 100-continue` has not sent its body: answer now, and
            // libmicrohttpd never asks for it (RFC 9110 section 10.1.1). A client already sending
            // would see its writes fail against a closed connection and might never read the
            // answer (RFC 9112 section 9.6), so a body within the discard allowance is read and
            // dropped first and answered at its end, as a chunked one is.
            let expectsContinue = Self.header(connection, "Expect")?.lowercased() == "100-continue"
            if expectsContinue || length > UInt64(bodyLimit + Self.discardAllowance) {
                return queue(
                    HTTPError.payloadTooLarge(limit: bodyLimit).response(), route: nil, state: state,
                    connection: connection)
            }
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
            state.rejection = .payloadTooLarge(limit: bodyLimit)
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
        var query: [String: String] = [:]
        for (name, value) in Self.pairs(connection, .GET_ARGUMENT_KIND) where query[name] == nil {
            query[name] = value
        }
        let request = HTTPRequest(
            method: method, path: state.path, query: query,
            headers: HTTPHeaders(Self.pairs(connection, .HEADER_KIND)), body: state.body,
            requestId: state.requestId, remoteAddress: Self.remoteAddress(connection), logger: logger,
            receivedAt: .now)
        state.body = []
        if router.runsInline(method, path: state.path) {
            let (response, route) = router.dispatch(request)
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
        handlers.submit {
            let (response, route) = router.dispatch(request)
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
        return open.count
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
            guard
                let mhdResponse = MHD_create_response_from_buffer(
                    bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
            else { return .NO }
            defer { MHD_destroy_response(mhdResponse) }
            var headers = response.headers
            headers.set(RequestIdentifier.headerName, state.requestId)
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
        record(status: status, route: route, bytesOut: response.body.count, state: state, connection: connection)
        return queued
    }

    private func record(status: Int, route: String?, bytesOut: Int, state: RequestState, connection: OpaquePointer) {
        let seconds = Self.seconds(ContinuousClock.now - state.startedAt)
        let routeLabel = route ?? "unmatched"
        let methodLabel = HTTPMethod(rawValue: state.methodToken)?.rawValue ?? "other"
        requestsTotal.increment(labels: [routeLabel, methodLabel, String(status)])
        requestDuration.observe(seconds, labels: [routeLabel])
        logger.info(
            "request",
            [
                "method": .string(methodLabel),
                "route": .string(routeLabel),
                "path": .string(state.path),
                "status": .int(status),
                "durationMs": .double((seconds * 1_000_000).rounded() / 1_000),
                "requestId": .string(state.requestId),
                "bytesIn": .int(state.bytesIn),
                "bytesOut": .int(bytesOut),
                "remote": .string(Self.remoteAddress(connection) ?? "-"),
            ])
    }

    /// Completion: releases the state retained in ``begin``; also fires for aborted requests.
    func complete(slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>, termination: MHD_RequestTerminationCode) {
        guard let raw = slot.pointee else { return }
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
                    "requestId": .string(state.requestId), "path": .string(state.path),
                    "termination": .int(Int(termination.rawValue)), "bytesIn": .int(state.bytesIn),
                ])
        }
    }

    private static func header(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
    }

    private static func pairs(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [(String, String)] {
        var pairs: [(String, String)] = []
        _ = withUnsafeMutablePointer(to: &pairs) {
            MHD_get_connection_values(connection, kind, collectPairsCallback, $0)
        }
        return pairs
    }

    private static func remoteAddress(_ connection: OpaquePointer) -> String? {
        guard let address = issuerd_mhd_client_address(connection) else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let ok: Bool = text.withUnsafeMutableBufferPointer { buffer in
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    withUnsafePointer(to: sin.pointee.sin_addr) {
                        inet_ntop(AF_INET, $0, buffer.baseAddress, socklen_t(buffer.count)) != nil
                    }
                }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    withUnsafePointer(to: sin6.pointee.sin6_addr) {
                        inet_ntop(AF_INET6, $0, buffer.baseAddress, socklen_t(buffer.count)) != nil
                    }
                }
            default:
                false
            }
        }
        guard ok else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
