/// How the client's requests reach Mastercard: one synchronous HTTPS POST (the outbox's
/// dispatcher provides it; tests may provide their own).
public protocol CustomerServiceTransport: Sendable {
    /// POSTs `body` to `url` with `headers` and returns the status and the answer's bytes.
    ///
    /// - Throws: when no answer arrived (connection refused, timeout): the call may be retried.
    func post(url: String, headers: [(String, String)], body: [UInt8]) throws -> (status: Int, body: [UInt8])
}

/// Calls the MDES Customer Service API: builds the body, signs it with OAuth 1.0a RSA-SHA256
/// over exactly those bytes, posts it, and reads Mastercard's answer.
public struct CustomerServiceClient: Sendable {
    /// The API's base up to and including `/v2` (`ISSUERD_MDES_CSAPI_URL`), without a trailing slash.
    public let baseURL: String
    public let signer: MastercardOAuth1Signer
    public let transport: any CustomerServiceTransport

    /// A client for `baseURL` (a trailing `/` is dropped).
    public init(baseURL: String, signer: MastercardOAuth1Signer, transport: any CustomerServiceTransport) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.signer = signer
        self.transport = transport
    }

    /// The URL, headers and body of `request`, signed now.
    ///
    /// - Throws: ``MastercardOAuthError`` for a base that is not an absolute http(s) URL; the
    ///   signing key's error.
    public func prepare(
        _ request: CustomerServiceRequest
    ) throws -> (
        url: String, headers: [(String, String)], body: [UInt8]
    ) {
        try prepare(path: request.operation.path, body: try request.body())
    }

    /// The URL and headers of a call of `path` with `body`, signed now over exactly those bytes.
    func prepare(path: String, body: [UInt8]) throws -> (url: String, headers: [(String, String)], body: [UInt8]) {
        let url = baseURL + path
        let authorization = try signer.authorizationHeader(method: "POST", url: url, body: body)
        return (
            url,
            [
                ("Authorization", authorization), ("Content-Type", "application/json"),
                ("Accept", "application/json"),
            ], body
        )
    }

    /// Sends `request` and reads the answer.
    ///
    /// - Throws: the transport's error when no answer arrived; signing errors.
    public func send(_ request: CustomerServiceRequest) throws -> CustomerServiceOutcome {
        let prepared = try prepare(request)
        let answer = try transport.post(url: prepared.url, headers: prepared.headers, body: prepared.body)
        return CustomerServiceOutcome.interpret(request.operation, status: answer.status, body: answer.body)
    }

    /// Sends a `/token/update` call and reads the answer's token list.
    ///
    /// - Throws: the transport's error when no answer arrived; signing or encoding errors.
    public func send(_ update: CustomerServiceTokenUpdate) throws -> CustomerServiceUpdateOutcome {
        let prepared = try prepare(path: CustomerServiceTokenUpdate.path, body: try update.body())
        let answer = try transport.post(url: prepared.url, headers: prepared.headers, body: prepared.body)
        return CustomerServiceUpdateOutcome.interpret(status: answer.status, body: answer.body)
    }
}
