import IssuerdCore

/// What the server remembers about one request between libmicrohttpd's calls for it.
///
/// libmicrohttpd calls the access handler once for the headers, once per body chunk and once
/// at the end, always on the connection's own worker thread, and the completion callback
/// afterwards on that thread too; so this object is never touched by two threads at once and
/// needs no lock (a handler thread touches only the ``Handoff``). It travels through
/// `*con_cls` as a retained `Unmanaged` reference.
final class RequestState {
    let startedAt: ContinuousClock.Instant
    let requestId: String
    /// The request's span (the caller's `traceparent` kept, or a new trace), answered in its
    /// `traceparent` header.
    let trace: TraceContext
    /// The method token as received (it may not be an ``HTTPMethod``).
    let methodToken: String
    /// The decoded path as received.
    let path: String
    /// The body so far; never longer than the body limit.
    var body: [UInt8] = []
    /// Every body byte received, including discarded ones, for the access log.
    var bytesIn = 0
    /// The answer decided before the body was complete (too large, or refused on the head
    /// alone) with its route for metrics; the rest of the body is discarded, not kept.
    var rejection: (response: HTTPResponse, route: String?)?
    /// What the route's admission established on the head, for the handler.
    var admitted: (any Sendable)?
    /// The request as its head was read for admission (no body), when it went through it.
    var head: HTTPRequest?
    /// The route the head resolved to, when it went through admission (a request with a body):
    /// dispatch reuses it instead of matching the path again.
    var resolved: Router.Resolution?
    /// Whether a response has been queued (libmicrohttpd accepts one per request).
    var responded = false
    /// Set while a handler thread runs the route (the connection is suspended meanwhile).
    var handoff: Handoff?

    init(requestId: String, trace: TraceContext, methodToken: String, path: String) {
        self.startedAt = ContinuousClock.now
        self.requestId = requestId
        self.trace = trace
        self.methodToken = methodToken
        self.path = path
    }
}
