/// Maps method and path to a handler, and turns every outcome into a response.
///
/// `respond(to:)` needs no socket, so routing, error envelopes and the 500 boundary are
/// tested directly; the server calls the same code. Literal segments beat parameters, so
/// `/v1/tsp/activation-codes/verify` is found before `/v1/tsp/activation-codes/{id}`.
public struct Router: Sendable {
    /// Handles one routed request; a thrown ``HTTPError`` becomes its envelope, anything else a 500.
    public typealias Handler = @Sendable (HTTPRequest) throws -> HTTPResponse
    /// Judges a request on its head alone (its body is empty), before the body is read: a thrown
    /// ``HTTPError`` is the answer, and the body is discarded as it arrives instead of being kept.
    /// For the credential a route requires, as far as it can be checked without the body. What it
    /// returns (the principal a credential checked in full names; nil when only its form was
    /// checked) reaches the handler as ``HTTPRequest/admitted``, so that credential is verified
    /// once per request.
    public typealias Admission = @Sendable (HTTPRequest) throws -> (any Sendable)?

    /// A class: resolution looks at every route of the path's length, and a struct copy retained
    /// its pattern's parts and both closures each time.
    private final class Entry: Sendable {
        let method: HTTPMethod
        let pattern: RoutePattern
        let inline: Bool
        let admission: Admission?
        let handler: Handler

        init(method: HTTPMethod, pattern: RoutePattern, inline: Bool, admission: Admission?, handler: @escaping Handler)
        {
            self.method = method
            self.pattern = pattern
            self.inline = inline
            self.admission = admission
            self.handler = handler
        }
    }

    /// What a method and path resolve to.
    package enum Resolution: Sendable {
        case matched(route: String, parameters: [String: String], handler: Handler, admission: Admission?)
        case methodNotAllowed(route: String, allowed: [HTTPMethod])
        case notFound
    }

    private var entries: [Entry] = []
    // The methods of the inline routes (GET serves HEAD too): for any other method
    // ``runsInline(_:path:)`` answers without splitting the path or resolving the route, work
    // every handed-off request would otherwise repeat (callgrind, docs/performance.md).
    private var inlineMethods: Set<HTTPMethod> = []

    /// Called with every response before it leaves, whatever produced it (a handler, a thrown
    /// error, a 404 or 405): headers that depend on the path rather than on the outcome
    /// (caching, a page's security policy) belong here, so that no error answer goes without them.
    public var finishing: @Sendable (HTTPRequest, inout HTTPResponse) -> Void = { _, _ in }

    /// Creates a router with no routes.
    public init() {}

    /// Every route in registration order, for the OpenAPI coverage check.
    public var routes: [(method: HTTPMethod, pattern: String)] {
        entries.map { ($0.method, $0.pattern.text) }
    }

    /// Registers a handler.
    ///
    /// Routes are declared once at start-up by code, so a malformed pattern or a second handler
    /// for the same method and path shape stops the process with a message naming it.
    ///
    /// - Parameters:
    ///   - method: The method; `GET` routes also answer `HEAD`.
    ///   - pattern: A path such as `/v1/cards/{cardId}`; `{name}` matches one non-empty segment.
    ///   - inline: Answer on the server's network thread instead of a handler thread: for a
    ///     handler that needs nothing that can block (`/healthz`), so that it is answered even
    ///     while every handler thread waits (on the database, up to its deadline).
    ///   - admission: Checked on the head of a request that has a body, before the body is read.
    ///   - handler: Called on a server thread with the routed request.
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, inline: Bool = false, admission: Admission? = nil,
        _ handler: @escaping Handler
    ) {
        let parsed: RoutePattern
        switch RoutePattern.parse(pattern) {
        case .success(let value): parsed = value
        case .failure(let error): preconditionFailure("Router.add: \(error)")
        }
        if let clash = entries.first(where: { $0.method == method && $0.pattern.hasSameShape(as: parsed) }) {
            preconditionFailure("Router.add: \(method) \(pattern) clashes with \(clash.method) \(clash.pattern.text)")
        }
        entries.append(Entry(method: method, pattern: parsed, inline: inline, admission: admission, handler: handler))
        if inline { inlineMethods.insert(method) }
    }

    /// Whether the server answers this request on its network thread: it resolves to an inline
    /// route. A method no inline route has is answered at once; otherwise only the (few) inline
    /// routes are matched unless one fits, so routed requests pay next to nothing for the question.
    package func runsInline(_ method: HTTPMethod, path: String) -> Bool {
        let methods: [HTTPMethod] = method == .head ? [.head, .get] : [method]
        guard path.hasPrefix("/"), methods.contains(where: inlineMethods.contains) else { return false }
        let pieces = Self.segments(of: path)
        guard
            let candidate = entries.first(where: {
                $0.inline && methods.contains($0.method) && $0.pattern.match(pieces) != nil
            })
        else { return false }
        guard case .matched(let route, _, _, _) = resolve(method, path: path) else { return false }
        return route == candidate.pattern.text
    }

    /// Resolves a method and path to a handler, a 405, or a 404.
    package func resolve(_ method: HTTPMethod, path: String) -> Resolution {
        guard path.hasPrefix("/") else { return .notFound }
        let pieces = Self.segments(of: path)
        var best: (entry: Entry, parameters: [String: String])?
        var bestGet: (entry: Entry, parameters: [String: String])?
        var shapeMatch: RoutePattern?
        var allowed: Set<HTTPMethod> = []
        // A route of another length is passed over without copying its entry (pattern, closures).
        for index in entries.indices where entries[index].pattern.segments.count == pieces.count {
            let entry = entries[index]
            guard let parameters = entry.pattern.match(pieces) else { continue }
            allowed.insert(entry.method)
            if shapeMatch.map({ entry.pattern.isMoreSpecific(than: $0) }) ?? true { shapeMatch = entry.pattern }
            if entry.method == method, best.map({ entry.pattern.isMoreSpecific(than: $0.entry.pattern) }) ?? true {
                best = (entry, parameters)
            }
            if entry.method == .get, bestGet.map({ entry.pattern.isMoreSpecific(than: $0.entry.pattern) }) ?? true {
                bestGet = (entry, parameters)
            }
        }
        // RFC 9110 section 9.3.2: HEAD is GET without the body; the server drops the body.
        if best == nil, method == .head { best = bestGet }
        if let best {
            return .matched(
                route: best.entry.pattern.text, parameters: best.parameters, handler: best.entry.handler,
                admission: best.entry.admission)
        }
        guard let shapeMatch else { return .notFound }
        if allowed.contains(.get) { allowed.insert(.head) }
        let ordered = HTTPMethod.allCases.filter { allowed.contains($0) }
        return .methodNotAllowed(route: shapeMatch.text, allowed: ordered)
    }

    /// The `/`-separated segments of a path after its leading `/`, empty ones kept.
    ///
    /// Split at the byte `/`, not by `Character`: splitting a string by characters runs grapheme
    /// breaking over the whole path (about 19,000 instructions a request under callgrind), and a
    /// `/` followed by a combining mark would be one character that is not a slash, keeping a
    /// slash inside a segment (a path parameter).
    static func segments(of path: String) -> [Substring] {
        let utf8 = path.utf8
        var pieces: [Substring] = []
        var start = utf8.index(after: utf8.startIndex)
        var index = start
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                pieces.append(path[start..<index])
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        pieces.append(path[start..<utf8.endIndex])
        return pieces
    }

    /// Answers a request: the handler's response, or the error envelope for 404, 405, a thrown
    /// ``HTTPError`` or an unexpected error (500, details logged at error level). Every
    /// response carries `X-Request-Id`.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        dispatch(request).response
    }

    /// ``respond(to:)`` plus the matched route pattern (`nil` when nothing matched) for metrics.
    ///
    /// - Parameter resolved: What ``admission(_:)`` resolved for this request's method and path,
    ///   when its head went through it: the path is not split and matched a second time.
    package func dispatch(
        _ request: HTTPRequest, resolved: Resolution? = nil
    ) -> (response: HTTPResponse, route: String?) {
        var response: HTTPResponse
        let route: String?
        switch resolved ?? resolve(request.method, path: request.path) {
        case .notFound:
            route = nil
            response = HTTPError.notFound().response()
        case .methodNotAllowed(let pattern, let allowed):
            route = pattern
            response = HTTPError.methodNotAllowed(allowed: allowed).response()
        case .matched(let pattern, let parameters, let handler, _):
            route = pattern
            response = Self.invoke(handler, with: Self.routed(request, pattern: pattern, parameters: parameters))
        }
        finishing(request, &response)
        response.headers.set(RequestIdentifier.headerName, request.requestId)
        return (response, route)
    }

    /// The answer to a request that announced a body, decided on its head (`request.body` is
    /// empty): a 404 or 405, or the refusal of the route's ``Admission``; nil when the body is to
    /// be read and the request handled as usual.
    package func admit(_ request: HTTPRequest) -> (response: HTTPResponse, route: String?)? {
        admission(request).refusal
    }

    /// ``admit(_:)`` and, when the request is admitted, what its route's ``Admission`` returned
    /// and the resolution, for ``dispatch(_:resolved:)`` of the same method and path.
    package func admission(
        _ request: HTTPRequest
    ) -> (refusal: (response: HTTPResponse, route: String?)?, admitted: (any Sendable)?, resolved: Resolution?) {
        var response: HTTPResponse
        let route: String?
        let resolution = resolve(request.method, path: request.path)
        switch resolution {
        case .notFound:
            route = nil
            response = HTTPError.notFound().response()
        case .methodNotAllowed(let pattern, let allowed):
            route = pattern
            response = HTTPError.methodNotAllowed(allowed: allowed).response()
        case .matched(let pattern, let parameters, _, let admission):
            guard let admission else { return (nil, nil, resolution) }
            do {
                return (nil, try admission(Self.routed(request, pattern: pattern, parameters: parameters)), resolution)
            } catch let error as HTTPError {
                route = pattern
                response = error.response()
            } catch {
                // Not an answer an admission gives: the handler, with the body, decides.
                return (nil, nil, resolution)
            }
        }
        finishing(request, &response)
        response.headers.set(RequestIdentifier.headerName, request.requestId)
        return ((response, route), nil, resolution)
    }

    private static func routed(_ request: HTTPRequest, pattern: String, parameters: [String: String]) -> HTTPRequest {
        var routed = request
        routed.route = pattern
        routed.pathParameters = parameters
        routed.logger = request.logger.with(["route": .string(pattern)])
        return routed
    }

    /// Runs a handler; nothing it throws escapes, and nothing about an unexpected error but the
    /// request id reaches the caller.
    private static func invoke(_ handler: Handler, with request: HTTPRequest) -> HTTPResponse {
        do {
            return try handler(request)
        } catch let error as HTTPError {
            // A 503 is a deliberate answer to a known condition (the database is away; the thrower
            // logged why at warning): at error level it would write one alarm per request for the
            // length of an outage (about 2,000 in a 10 s outage in scripts/reliability).
            if error.status == 503 {
                request.logger.notice(
                    "answered unavailable",
                    ["error": .string(error.code.rawValue), "source": "\(error.file):\(error.line)"])
            } else if error.status >= 500 {
                request.logger.error(
                    "handler failed", ["error": .string(error.description), "source": "\(error.file):\(error.line)"])
            }
            return error.response()
        } catch {
            request.logger.error(
                "unhandled error",
                [
                    "error": .string(String(describing: error)),
                    "errorType": .string(String(reflecting: type(of: error))),
                ])
            return HTTPError.internalError(requestId: request.requestId).response()
        }
    }
}
