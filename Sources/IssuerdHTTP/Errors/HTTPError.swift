import IssuerdCore

/// An error that a handler throws to answer with a status and the API's error envelope.
///
/// Rendered as `{"error":{"code":…,"message":…,…context}}` (docs/openapi.yaml, `ErrorEnvelope`). The
/// message and context are sent to the caller, so they must never hold a secret, a PAN, SQL
/// or a stack trace; ``file`` and ``line`` stay on the server for the log.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    /// A stable, snake_case error code; other modules add their own as static members.
    public struct Code: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The code as sent on the wire.
        public var rawValue: String

        /// Creates a code from its wire form.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Creates a code from a literal such as `"card_not_found"`.
        public init(stringLiteral value: String) { self.rawValue = value }

        /// The code as sent on the wire.
        public var description: String { rawValue }

        /// 400: the body is not JSON or does not fit the expected shape.
        public static let malformedJSON: Code = "malformed_json"
        /// 400: the request's head is ambiguous or malformed (framing, Host, control characters).
        public static let malformedRequest: Code = "malformed_request"
        /// 404: no route, or a resource the caller may not know exists.
        public static let notFound: Code = "not_found"
        /// 405: the path exists but not for this method.
        public static let methodNotAllowed: Code = "method_not_allowed"
        /// 413: the body exceeds the server's limit.
        public static let payloadTooLarge: Code = "payload_too_large"
        /// 415: the body is not `application/json`.
        public static let unsupportedMediaType: Code = "unsupported_media_type"
        /// 500: an unexpected failure; details are only in the log.
        public static let internalError: Code = "internal_error"
        /// 501: a request method the server does not implement.
        public static let notImplemented: Code = "not_implemented"
    }

    /// The HTTP status code.
    public var status: Int
    /// The stable error code.
    public var code: Code
    /// A human sentence, safe to show to the caller.
    public var message: String
    /// Extra members of the envelope, e.g. `attemptId` or `reasons`; cannot replace `code` or `message`.
    public var context: [String: JSONValue]
    /// Extra response headers, e.g. `Allow` on a 405 or `Retry-After` on a 429.
    public var headers: HTTPHeaders
    /// Where the error was made, for the server log only.
    public var file: String
    /// Where the error was made, for the server log only.
    public var line: Int

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - status: The HTTP status code.
    ///   - code: The stable error code.
    ///   - message: A human sentence safe to send to the caller.
    ///   - context: Extra envelope members.
    ///   - headers: Extra response headers.
    public init(
        status: Int,
        code: Code,
        message: String,
        context: [String: JSONValue] = [:],
        headers: HTTPHeaders = [:],
        file: String = #fileID,
        line: Int = #line
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.context = context
        self.headers = headers
        self.file = file
        self.line = line
    }

    /// `HTTP <status> <code>: <message>`, safe to log.
    public var description: String { "HTTP \(status) \(code): \(message)" }

    /// The envelope `{"error":{"code","message",…context}}` as a JSON value.
    public var envelope: JSONValue {
        var members = context
        members["code"] = .string(code.rawValue)
        members["message"] = .string(message)
        return ["error": .object(members)]
    }

    /// The response carrying the envelope, this error's headers and, when given, `X-Request-Id`.
    ///
    /// - Parameter requestId: The request id to echo.
    public func response(requestId: String? = nil) -> HTTPResponse {
        var response: HTTPResponse
        do {
            response = try .json(envelope, status: status)
        } catch {
            // A JSONValue holding a non-finite double is the only way to get here.
            response = .text(
                #"{"error":{"code":"internal_error","message":"error could not be encoded"}}"#,
                status: 500, contentType: HTTPResponse.jsonContentType)
        }
        for field in headers { response.headers.set(field.name, field.value) }
        if let requestId { response.headers.set(RequestIdentifier.headerName, requestId) }
        return response
    }
}

extension HTTPError {
    /// 404 `not_found`.
    public static func notFound(
        _ message: String = "no such resource", file: String = #fileID, line: Int = #line
    ) -> HTTPError {
        HTTPError(status: 404, code: .notFound, message: message, file: file, line: line)
    }

    /// 405 `method_not_allowed` with the `Allow` header RFC 9110 section 15.5.6 requires.
    public static func methodNotAllowed(allowed: [HTTPMethod], file: String = #fileID, line: Int = #line) -> HTTPError {
        let names = allowed.map(\.rawValue).joined(separator: ", ")
        return HTTPError(
            status: 405, code: .methodNotAllowed, message: "method not allowed; allowed: \(names)",
            headers: ["Allow": names], file: file, line: line)
    }

    /// 413 `payload_too_large`, naming the limit so a client can fix its request.
    public static func payloadTooLarge(limit: Int, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(
            status: 413, code: .payloadTooLarge, message: "request body exceeds \(limit) bytes",
            context: ["limitBytes": .int(limit)], file: file, line: line)
    }

    /// 415 `unsupported_media_type`.
    public static func unsupportedMediaType(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(
            status: 415, code: .unsupportedMediaType,
            message: "Content-Type must be application/json; charset=utf-8", file: file, line: line)
    }

    /// 400 `malformed_json`, with the offending field path in `field` when known.
    public static func malformedJSON(
        _ message: String, field: String? = nil, file: String = #fileID, line: Int = #line
    ) -> HTTPError {
        HTTPError(
            status: 400, code: .malformedJSON, message: message,
            context: field.map { ["field": .string($0)] } ?? [:], file: file, line: line)
    }

    /// 400 `malformed_request` with `Connection: close`: after a head whose framing cannot be
    /// trusted, nothing more on the connection is read as a request.
    public static func malformedRequest(_ why: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(
            status: 400, code: .malformedRequest, message: "malformed request: \(why)",
            headers: ["Connection": "close"],
            file: file, line: line)
    }

    /// 500 `internal_error` whose message gives the request id to quote to support.
    public static func internalError(requestId: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(
            status: 500, code: .internalError, message: "internal error; request id \(requestId)",
            context: ["requestId": .string(requestId)], file: file, line: line)
    }

    /// 501 `not_implemented` for a method outside ``HTTPMethod``.
    public static func notImplemented(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 501, code: .notImplemented, message: "request method not implemented", file: file, line: line)
    }
}
