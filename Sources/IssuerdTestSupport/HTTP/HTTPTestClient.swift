import Foundation
import IssuerdCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A small synchronous HTTP client for tests: over `URLSession` to a server's socket, or in
/// process, straight into a handler that stands for the server (``init(exchange:)``).
///
/// Tests call the server from plain threads and want a value back, so each call waits for its
/// task; completions arrive on URLSession's own queue, never on the caller's thread, so the
/// wait cannot deadlock. In process, each request of ``sendConcurrently(_:)`` runs on a thread
/// of its own, so requests that wait on each other in the server (a row lock) still overlap.
/// For what URLSession cannot do (bodies trickled in pieces, malformed request lines) use
/// ``RawHTTPConnection``.
public final class HTTPTestClient: Sendable {
    /// A request for ``sendConcurrently(_:)``.
    public struct Request: Sendable {
        /// The method token.
        public var method: String
        /// The path, with its query string if any.
        public var path: String
        /// Header fields to set.
        public var headers: [String: String]
        /// The body, if any.
        public var body: [UInt8]?

        /// Creates a request.
        public init(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
        }
    }

    /// What answers a request in process: the server's own routing, without its socket.
    public typealias Exchange = @Sendable (Request) -> TestHTTPResponse

    /// `http://host:port`, without a trailing slash (`http://in-process` in process).
    public let baseURL: String
    private let session: URLSession?
    private let exchange: Exchange?

    /// Creates a client for a server on `host:port`.
    ///
    /// - Parameters:
    ///   - port: The server's bound port.
    ///   - host: The address; loopback unless given.
    ///   - timeout: Seconds before a request fails instead of hanging the test.
    public init(port: Int, host: String = "127.0.0.1", timeout: TimeInterval = 30) {
        baseURL = "http://\(host):\(port)"
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        configuration.httpMaximumConnectionsPerHost = 128
        session = URLSession(configuration: configuration)
        exchange = nil
    }

    /// Creates a client whose requests never touch a socket: each is handed to `exchange`.
    public init(exchange: @escaping Exchange) {
        baseURL = "http://in-process"
        session = nil
        self.exchange = exchange
    }

    deinit {
        session?.invalidateAndCancel()
    }

    /// True when requests go straight to a handler rather than over a socket.
    public var isInProcess: Bool { exchange != nil }

    /// Sends one request and waits for the response.
    ///
    /// - Throws: ``TestHTTPError`` when the request fails at the transport level.
    public func send(
        _ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil
    ) throws -> TestHTTPResponse {
        try sendConcurrently([Request(method, path, headers: headers, body: body)])[0].get()
    }

    /// Sends `GET path`.
    public func get(_ path: String, headers: [String: String] = [:]) throws -> TestHTTPResponse {
        try send("GET", path, headers: headers)
    }

    /// Sends `POST path` with a JSON text body and `Content-Type: application/json`.
    public func postJSON(_ path: String, _ json: String, headers: [String: String] = [:]) throws -> TestHTTPResponse {
        var all = headers
        if all["Content-Type"] == nil { all["Content-Type"] = "application/json" }
        return try send("POST", path, headers: all, body: Array(json.utf8))
    }

    /// Starts every request at once and waits for all of them.
    ///
    /// - Returns: One result per request, in the same order.
    public func sendConcurrently(_ requests: [Request]) -> [Result<TestHTTPResponse, TestHTTPError>] {
        let results = Lock([Result<TestHTTPResponse, TestHTTPError>?](repeating: nil, count: requests.count))
        let group = DispatchGroup()
        if let exchange {
            guard requests.count > 1 else { return requests.map { .success(exchange($0)) } }
            for (index, request) in requests.enumerated() {
                group.enter()
                let thread = Thread {
                    let response = exchange(request)
                    results.withLock { $0[index] = .success(response) }
                    group.leave()
                }
                thread.stackSize = 1 << 20
                thread.start()
            }
            group.wait()
            return results.withLock { $0 }.map { $0 ?? .failure(TestHTTPError("request produced no result")) }
        }
        guard let session else { return requests.map { _ in .failure(TestHTTPError("no transport")) } }
        for (index, request) in requests.enumerated() {
            guard let url = URL(string: baseURL + request.path) else {
                results.withLock { $0[index] = .failure(TestHTTPError("bad URL path \(request.path)")) }
                continue
            }
            var urlRequest = URLRequest(url: url)
            urlRequest.httpMethod = request.method
            for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
            if let body = request.body { urlRequest.httpBody = Data(body) }
            group.enter()
            session.dataTask(with: urlRequest) { data, response, error in
                let result: Result<TestHTTPResponse, TestHTTPError>
                if let error {
                    result = .failure(TestHTTPError("\(request.method) \(request.path): \(error.localizedDescription)"))
                } else if let http = response as? HTTPURLResponse {
                    let headers = http.allHeaderFields.compactMap { key, value -> (name: String, value: String)? in
                        guard let name = key as? String, let value = value as? String else { return nil }
                        return (name, value)
                    }
                    result = .success(
                        TestHTTPResponse(status: http.statusCode, headers: headers, body: Array(data ?? Data())))
                } else {
                    result = .failure(TestHTTPError("\(request.method) \(request.path): not an HTTP response"))
                }
                results.withLock { $0[index] = result }
                group.leave()
            }.resume()
        }
        group.wait()
        return results.withLock { $0 }.map { $0 ?? .failure(TestHTTPError("request produced no result")) }
    }
}
