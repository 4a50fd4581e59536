import IssuerdCore

/// One HTTP request as a handler sees it: decoded, routed and bounded in size.
///
/// The server builds it once the whole body has arrived (never more than the configured body
/// limit); tests build it directly to drive a ``Router`` without sockets.
public struct HTTPRequest: Sendable {
    /// The request method.
    public var method: HTTPMethod
    /// The percent-decoded path, without the query string.
    public var path: String
    /// Query parameters, percent-decoded (`+` read as a space); the first of repeated names wins.
    public var query: [String: String]
    /// The request header fields.
    public var headers: HTTPHeaders
    /// The request body, at most the server's body limit.
    public var body: [UInt8]
    /// Values of the `{name}` segments of the matched route.
    public var pathParameters: [String: String]
    /// The matched route pattern, e.g. `/v1/cards/{cardId}`; bounded, so fit for metric labels.
    public var route: String
    /// The caller's sane `X-Request-Id`, or a fresh one; echoed on the response.
    public var requestId: String
    /// The peer's IP address, when known.
    public var remoteAddress: String?
    /// The request's span of its trace: the caller's `traceparent` kept, or a new trace.
    public var trace: TraceContext
    /// A logger whose lines carry `requestId` and `traceId`.
    public var logger: Logger
    /// When the whole request had arrived, before it waited for a handler thread: what the
    /// request has waited since counts against the bounds on its later waits (the database's).
    public var receivedAt: ContinuousClock.Instant
    /// What the route's ``Router/Admission`` established on the head (a verified principal),
    /// set by the server only; nil when no admission ran (a request without a body) or it
    /// established nothing.
    public var admitted: (any Sendable)?

    /// Creates a request.
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - path: The decoded path, starting with `/`.
    ///   - query: Decoded query parameters.
    ///   - headers: Header fields.
    ///   - body: The body bytes.
    ///   - requestId: The request id; a fresh one when omitted.
    ///   - remoteAddress: The peer's IP address.
    ///   - logger: The base logger; the request's copy adds `requestId` and `traceId` to every line.
    ///   - receivedAt: When the request had arrived; now when omitted.
    ///   - trace: The request's trace; resolved from its `traceparent` header when omitted.
    public init(
        method: HTTPMethod,
        path: String,
        query: [String: String] = [:],
        headers: HTTPHeaders = [:],
        body: [UInt8] = [],
        requestId: String = RequestIdentifier.generate(),
        remoteAddress: String? = nil,
        logger: Logger = .silent,
        receivedAt: ContinuousClock.Instant = .now,
        trace: TraceContext? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.pathParameters = [:]
        self.route = ""
        self.requestId = requestId
        self.remoteAddress = remoteAddress
        let trace = trace ?? TraceContext.resolve(headers[TraceContext.headerName])
        self.trace = trace
        self.logger = logger.with(["requestId": .string(requestId), "traceId": .string(trace.traceID)])
        self.receivedAt = receivedAt
    }
}
