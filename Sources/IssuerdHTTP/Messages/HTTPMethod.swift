/// A request method the service routes (RFC 9110 section 9).
///
/// Methods outside this set never reach a handler: the server answers them with 501, as
/// RFC 9110 section 9.1 asks for methods an origin server does not implement.
public enum HTTPMethod: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case get = "GET"
    case head = "HEAD"
    case post = "POST"
    case put = "PUT"
    case patch = "PATCH"
    case delete = "DELETE"
    case options = "OPTIONS"

    /// The method token as it appears on the request line, e.g. `GET`.
    public var description: String { rawValue }
}
