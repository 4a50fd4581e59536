import Foundation

/// A response as a test sees it, from ``HTTPTestClient`` or ``RawHTTPConnection``.
public struct TestHTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields in received order (names as sent).
    public var headers: [(name: String, value: String)]
    /// The body bytes.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of a header, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object, or `nil` when it is not one.
    public func jsonObject() -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    /// The error envelope's inner object (`{"error":{…}}`, docs/openapi.yaml `ErrorEnvelope`), or `nil`.
    public func errorEnvelope() -> [String: Any]? {
        jsonObject()?["error"] as? [String: Any]
    }
}

/// A test helper failed to talk to the server; the message says which step.
public struct TestHTTPError: Error, CustomStringConvertible, Sendable {
    /// What failed.
    public var description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}
