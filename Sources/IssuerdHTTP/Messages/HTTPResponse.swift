import IssuerdCore

/// A complete HTTP response: status, header fields and body.
///
/// The server adds `Content-Length` itself and drops the body of answers to `HEAD`, so a
/// handler never sets either.
public struct HTTPResponse: Sendable {
    /// The `Content-Type` of every JSON response.
    public static let jsonContentType = "application/json; charset=utf-8"

    /// The status code, 100 to 599.
    public var status: Int
    /// Header fields to send.
    public var headers: HTTPHeaders
    /// The body bytes.
    public var body: [UInt8]
    /// A body written while it is sent, instead of ``body`` (which is then empty), for a large
    /// export.
    public var streamed: StreamedBody?

    /// Creates a response.
    public init(status: Int = 200, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response encoded with the shared ``JSONCoding/encoder``.
    ///
    /// - Parameters:
    ///   - value: The value to encode.
    ///   - status: The status code; 200 unless given.
    /// - Throws: The encoder's error when `value` cannot be encoded (a non-finite number, say);
    ///   the router turns it into a 500 and logs it.
    public static func json<T: Encodable>(_ value: T, status: Int = 200) throws -> HTTPResponse {
        let body = try JSONCoding.encoder.encode(value)
        return HTTPResponse(status: status, headers: ["Content-Type": jsonContentType], body: Array(body))
    }

    /// A response whose body `streamed` writes while it is sent (chunked transfer coding).
    ///
    /// - Parameters:
    ///   - streamed: The body, written once the head is sent.
    ///   - contentType: Its `Content-Type`.
    public static func streamed(_ streamed: StreamedBody, contentType: String) -> HTTPResponse {
        var response = HTTPResponse(status: 200, headers: ["Content-Type": contentType])
        response.streamed = streamed
        return response
    }

    /// A 204 response with no body.
    public static func noContent() -> HTTPResponse {
        HTTPResponse(status: 204)
    }

    /// A text response such as the Prometheus exposition.
    ///
    /// - Parameters:
    ///   - text: The body, sent as UTF-8.
    ///   - status: The status code; 200 unless given.
    ///   - contentType: The `Content-Type`; plain UTF-8 text unless given.
    public static func text(
        _ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8"
    ) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": contentType], body: Array(text.utf8))
    }
}
