import Foundation

/// Why an ``IssuerdClient`` call failed.
///
/// A struct with an extensible ``code`` rather than an enum, so that a new code is not a breaking
/// change: switch over `code` with a `default`. Expected negative outcomes are not errors: a
/// provisioning decline is ``ProvisioningResult/declined(attemptId:reasons:)``.
///
/// ``description`` is safe to log and show: it never contains the bearer token, a certificate,
/// the nonce, pass data or a server message, only codes, the HTTP status and the request id.
public struct IssuerdClientError: Error, CustomStringConvertible {
    /// A stable, extensible error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        public let name: String

        private init(_ name: String) { self.name = name }

        /// The request never got an HTTP answer (DNS, TLS, connection reset, …).
        public static let transport = Code("transport")
        /// The call's time budget ran out.
        public static let timedOut = Code("timed_out")
        /// 401: the bearer token is missing, expired or not accepted; sign the user in again.
        public static let unauthenticated = Code("unauthenticated")
        /// 403 other than a provisioning decline.
        public static let forbidden = Code("forbidden")
        /// 404: unknown card or pass, or not the caller's.
        public static let notFound = Code("not_found")
        /// 409: the resource is not in a state that allows the call (e.g. the token is not
        /// awaiting verification), or an idempotency key was reused with another body.
        public static let conflict = Code("conflict")
        /// 429: too many calls; see ``IssuerdClientError/retryAfter``.
        public static let throttled = Code("throttled")
        /// 422 `certificate_chain_invalid`: PassKit's certificates were refused; see
        /// ``IssuerdClientError/detail``.
        public static let invalidCertificateChain = Code("invalid_certificate_chain")
        /// Another 4xx: the server found the request malformed (a client bug).
        public static let badRequest = Code("bad_request")
        /// 5xx, after any retries.
        public static let server = Code("server")
        /// The server's answer did not follow the wire contract.
        public static let invalidResponse = Code("invalid_response")
        /// An argument cannot be sent (e.g. an empty card id).
        public static let invalidArgument = Code("invalid_argument")

        public var description: String { name }
    }

    /// What went wrong.
    public let code: Code
    /// The HTTP status, when the server answered.
    public let status: Int?
    /// The server's `error.code` (e.g. `database_unavailable`), when it sent one.
    public let serverCode: String?
    /// The `X-Request-Id` of the last attempt: quote it to the issuer's support.
    public let requestId: String?
    /// How long the server asked the app to wait (429, `Retry-After`).
    public let retryAfter: Duration?
    /// A safe detail: the failed certificate check (422), or what was wrong with a response.
    public let detail: String?
    /// The transport error behind ``Code/transport``.
    public let underlying: (any Error)?
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    /// Creates an error; the public factories below name the common cases.
    init(
        _ code: Code, status: Int? = nil, serverCode: String? = nil, requestId: String? = nil,
        retryAfter: Duration? = nil,
        detail: String? = nil, underlying: (any Error)? = nil, file: String, line: Int
    ) {
        self.code = code
        self.status = status
        self.serverCode = serverCode
        self.requestId = requestId
        self.retryAfter = retryAfter
        self.detail = detail
        self.underlying = underlying
        self.file = file
        self.line = line
    }

    public var description: String {
        var parts = ["IssuerdClientError.\(code)"]
        if let status { parts.append("status \(status)") }
        if let serverCode { parts.append("code \(serverCode)") }
        if let retryAfter { parts.append("retry after \(retryAfter)") }
        if let detail { parts.append(detail) }
        // Only the error's type and code: a URLError's own description can carry the URL.
        if let underlying { parts.append("underlying \(Self.safeSummary(of: underlying))") }
        if let requestId { parts.append("request \(requestId)") }
        return parts.joined(separator: ", ")
    }

    private static func safeSummary(of error: any Error) -> String {
        let bridged = error as NSError
        return "\(bridged.domain) \(bridged.code)"
    }
}

extension IssuerdClientError {
    /// The request never got an HTTP answer.
    public static func transport(_ underlying: any Error, file: String = #fileID, line: Int = #line) -> Self {
        Self(.transport, underlying: underlying, file: file, line: line)
    }

    /// The call's time budget ran out.
    public static func timedOut(file: String = #fileID, line: Int = #line) -> Self {
        Self(.timedOut, file: file, line: line)
    }

    /// 401.
    public static func unauthenticated(requestId: String?, file: String = #fileID, line: Int = #line) -> Self {
        Self(.unauthenticated, status: 401, requestId: requestId, file: file, line: line)
    }

    /// 404.
    public static func notFound(requestId: String?, file: String = #fileID, line: Int = #line) -> Self {
        Self(.notFound, status: 404, requestId: requestId, file: file, line: line)
    }

    /// 409.
    public static func conflict(
        serverCode: String?, requestId: String?, file: String = #fileID, line: Int = #line
    ) -> Self {
        Self(.conflict, status: 409, serverCode: serverCode, requestId: requestId, file: file, line: line)
    }

    /// 429, with the server's `Retry-After` when it sent one.
    public static func throttled(
        retryAfter: Duration?, requestId: String?, file: String = #fileID, line: Int = #line
    ) -> Self {
        Self(.throttled, status: 429, requestId: requestId, retryAfter: retryAfter, file: file, line: line)
    }

    /// 422 `certificate_chain_invalid`.
    public static func invalidCertificateChain(
        detail: String?, requestId: String?, file: String = #fileID, line: Int = #line
    ) -> Self {
        Self(
            .invalidCertificateChain, status: 422, serverCode: "certificate_chain_invalid", requestId: requestId,
            detail: detail, file: file, line: line)
    }

    /// 5xx.
    public static func server(
        status: Int, code: String?, requestId: String?, file: String = #fileID, line: Int = #line
    ) -> Self {
        Self(.server, status: status, serverCode: code, requestId: requestId, file: file, line: line)
    }

    /// The answer broke the wire contract.
    public static func invalidResponse(
        _ detail: String, requestId: String?, file: String = #fileID, line: Int = #line
    ) -> Self {
        Self(.invalidResponse, requestId: requestId, detail: detail, file: file, line: line)
    }

    /// An argument cannot be sent.
    public static func invalidArgument(_ detail: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(.invalidArgument, detail: detail, file: file, line: line)
    }
}
