import Foundation
import IssuerdCore

extension Router {
    /// Answers one request as ``HTTPServer`` would, without a socket: for tests that run the same
    /// requests in process and over the network.
    ///
    /// What the server decides on the head is decided here in the same order: an unknown method
    /// is 501, a request with a body is admitted on its head first (``admit(_:)``), a body over
    /// `bodyLimit` is 413, the `X-Request-Id` is taken or made and echoed, and the body of an
    /// answer to `HEAD` is dropped. What only a socket can show (framing, slow clients,
    /// connection limits, the access log and its metrics) needs the real server.
    ///
    /// - Parameters:
    ///   - method: The method token as a client sent it.
    ///   - target: The request target: a path, percent-encoded, with its query string if any.
    ///   - headers: The request's header fields.
    ///   - body: The body.
    ///   - bodyLimit: The server's body limit.
    ///   - remoteAddress: The peer address handlers see.
    ///   - logger: The base logger of the request.
    /// - Returns: The answer, with `X-Request-Id` and `Content-Length` set as on the wire.
    package func exchange(
        method: String, target: String, headers: HTTPHeaders, body: [UInt8], bodyLimit: Int,
        remoteAddress: String = "127.0.0.1", logger: Logger = .silent
    ) -> HTTPResponse {
        let requestId = RequestIdentifier.resolve(headers[RequestIdentifier.headerName])
        var response = answer(
            method: method, target: target, headers: headers, body: body, bodyLimit: bodyLimit,
            requestId: requestId, remoteAddress: remoteAddress, logger: logger)
        if !(100...599).contains(response.status) { response.status = 500 }
        response.headers.set(RequestIdentifier.headerName, requestId)
        if let streamed = response.streamed {
            response.body = streamed.collect()
            response.streamed = nil
        }
        if method == HTTPMethod.head.rawValue { response.body = [] }
        response.headers.set("Content-Length", String(response.body.count))
        return response
    }

    private func answer(
        method token: String, target: String, headers: HTTPHeaders, body: [UInt8], bodyLimit: Int,
        requestId: String, remoteAddress: String, logger: Logger
    ) -> HTTPResponse {
        let (path, query) = Self.split(target)
        guard let method = HTTPMethod(rawValue: token) else { return HTTPError.notImplemented().response() }
        var request = HTTPRequest(
            method: method, path: path, query: query, headers: headers, requestId: requestId,
            remoteAddress: remoteAddress, logger: logger)
        if !body.isEmpty, let rejection = admit(request) { return rejection.response }
        guard body.count <= bodyLimit else { return HTTPError.payloadTooLarge(limit: bodyLimit).response() }
        request.body = body
        return dispatch(request).response
    }

    /// The decoded path and query of a request target, as libmicrohttpd hands them over: the
    /// path percent-decoded, each query pair decoded with `+` as a space, the first of repeated
    /// names kept.
    static func split(_ target: String) -> (path: String, query: [String: String]) {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let field = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = decode(String(field[0]), plusAsSpace: true)
                if query[name] == nil {
                    query[name] = field.count == 2 ? decode(String(field[1]), plusAsSpace: true) : ""
                }
            }
        }
        return (decode(path, plusAsSpace: false), query)
    }

    private static func decode(_ text: String, plusAsSpace: Bool) -> String {
        let spaced = plusAsSpace ? text.replacingOccurrences(of: "+", with: " ") : text
        return spaced.removingPercentEncoding ?? spaced
    }
}
