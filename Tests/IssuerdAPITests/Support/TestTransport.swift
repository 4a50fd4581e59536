import Foundation
import IssuerdHTTP
import IssuerdTestSupport

@testable import IssuerdAPI

/// How a test's requests reach a ``TestApplication``: the same test body runs either way.
enum TestTransport: String, Sendable, CaseIterable {
    /// Straight into the application's router, in process: the server's admission on the head,
    /// body limit, routing and error envelopes, without a socket (`Router.exchange`).
    case router
    /// Over a loopback socket to the real server (libmicrohttpd): for what only the wire shows,
    /// such as framing, connection limits, the access log and the request metrics.
    case live

    /// `ISSUERD_TEST_TRANSPORT` (`router` or `live`), so a whole run can go either way; `live`
    /// unless set. In process is not the faster default here: the handler then runs on the
    /// test's own thread, and the API suites took 277 s in process against 253 s over the socket
    /// on an idle two-core machine.
    static let `default`: TestTransport = {
        let setting = ProcessInfo.processInfo.environment["ISSUERD_TEST_TRANSPORT"] ?? ""
        return TestTransport(rawValue: setting) ?? .live
    }()

    /// A client for `application` over this transport.
    func client(for application: IssuerdApplication) -> HTTPTestClient {
        switch self {
        case .live:
            return HTTPTestClient(port: application.port)
        case .router:
            let router = application.router
            let bodyLimit = application.configuration.bodyLimit
            // The server's logger: a handler's error lines (a 500's cause) land where they would.
            let logger = application.logger.labelled("issuerd.http")
            return HTTPTestClient { request in
                var headers = HTTPHeaders(request.headers.map { ($0.key, $0.value) })
                if !headers.contains("Host") { headers.set("Host", "127.0.0.1:\(application.port)") }
                if let body = request.body, !headers.contains("Content-Length") {
                    headers.set("Content-Length", String(body.count))
                }
                let response = router.exchange(
                    method: request.method, target: request.path, headers: headers, body: request.body ?? [],
                    bodyLimit: bodyLimit, logger: logger)
                return TestHTTPResponse(
                    status: response.status, headers: response.headers.map { ($0.name, $0.value) },
                    body: response.body)
            }
        }
    }
}
