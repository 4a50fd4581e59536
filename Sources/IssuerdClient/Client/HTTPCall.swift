import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One logical call to issuerd, before any attempt is made.
struct HTTPCall: Sendable {
    /// The two methods the issuer app uses.
    enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
    }

    /// The HTTP method.
    let method: Method
    /// The path below the base URL, already percent-encoded.
    let path: String
    /// The JSON body of a POST.
    let body: Data?
    /// Generated once per logical call and sent on every attempt, so a retried POST is answered
    /// from issuerd's stored response instead of running twice (`Idempotency-Key`, docs/openapi.yaml).
    let idempotencyKey: String?

    init(method: Method, path: String, body: Data? = nil, idempotencyKey: String? = nil) {
        self.method = method
        self.path = path
        self.body = body
        self.idempotencyKey = idempotencyKey
    }

    /// A JSON POST with a fresh idempotency key.
    static func post(path: String, json: some Encodable) throws(IssuerdClientError) -> HTTPCall {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let body: Data
        do { body = try encoder.encode(json) } catch { throw .invalidArgument("request body cannot be encoded") }
        return HTTPCall(method: .post, path: path, body: body, idempotencyKey: UUID().uuidString)
    }

    /// Whether repeating the call cannot duplicate its effect.
    var isRetrySafe: Bool { method == .get || idempotencyKey != nil }

    /// The request of one attempt.
    ///
    /// - Parameters:
    ///   - baseURL: issuerd's root; its path is kept as a prefix.
    ///   - token: The bearer token.
    ///   - requestId: A fresh id for this attempt.
    ///   - timeout: The rest of the call's budget; URLSession's own timeout is only a backstop
    ///     (it measures idle time, not the whole exchange, in whole seconds on Linux).
    func urlRequest(
        baseURL: URL, token: String, requestId: String, timeout: Duration
    ) throws(IssuerdClientError) -> URLRequest {
        var root = baseURL.absoluteString
        while root.hasSuffix("/") { root.removeLast() }
        guard let url = URL(string: root + path), url.scheme == "https" || url.scheme == "http" else {
            throw .invalidArgument("base URL is not an http(s) URL")
        }
        // RFC 6750 §2.1: a bearer token is visible ASCII; anything else could split the header.
        guard !token.isEmpty else { throw .unauthenticated(requestId: nil) }
        guard token.utf8.count <= 8192, token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .invalidArgument("bearer token is not 1 to 8192 visible ASCII characters")
        }
        var request = URLRequest(url: url)
        request.httpMethod = method.rawValue
        // Whole seconds, at least 1: FoundationNetworking truncates the interval to seconds, and
        // 0 makes libcurl fail at once with NSURLErrorTimedOut (measured on Swift 6.3, Linux).
        // The deadline race in `send` enforces the real budget.
        request.timeoutInterval = max(Double(timeout.components.seconds + 1), 1)
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue(requestId, forHTTPHeaderField: "X-Request-Id")
        if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = body
        }
        return request
    }
}
