import Foundation
import IssuerdClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Shared fixtures: a client pointed at a stub, a bearer token that error texts must never
/// contain, and PassKit-shaped inputs.
enum ClientFixtures {
    /// The token the stub accepts. Long and distinctive so a leak into a description is caught.
    static let token = "eyJhbGciOiJIUzI1NiJ9.test-secret-bearer-token-7f3a9c"

    /// A client for `server`, with its own session so tests share no connections.
    ///
    /// The default budget is generous on purpose: in the full suite, blocking database and
    /// socket tests can occupy Swift's cooperative pool (two threads on a 2-core machine) for
    /// seconds, and an async test that cannot resume must not be mistaken for a slow server.
    /// Tests of the deadline itself pass their own small budget.
    static func client(
        for server: StubHTTPServer, budget: Duration = .seconds(120),
        retry: RetryPolicy = RetryPolicy(initialBackoff: .milliseconds(10)),
        token: String = ClientFixtures.token
    ) -> IssuerdClient {
        IssuerdClient(
            baseURL: server.baseURL, session: URLSession(configuration: .ephemeral), timeBudget: budget,
            retryPolicy: retry,
            tokenProvider: { token })
    }

    /// A client for an arbitrary base URL (e.g. a port that refuses connections).
    static func client(baseURL: URL, retry: RetryPolicy) -> IssuerdClient {
        IssuerdClient(
            baseURL: baseURL, session: URLSession(configuration: .ephemeral), timeBudget: .seconds(120),
            retryPolicy: retry,
            tokenProvider: { token })
    }

    /// Bytes that differ on every call, so a decoded value cannot match by accident.
    static func randomBytes(_ count: Int) -> Data {
        Data((0..<count).map { _ in UInt8.random(in: 0...255) })
    }

    /// A 65-byte uncompressed-point-shaped key.
    static func ephemeralKey() -> Data { Data([0x04]) + randomBytes(64) }

    /// The stub's answer when the bearer token is not ``token``, as issuerd answers it.
    static let unauthenticatedReply = StubHTTPServer.Reply.json(
        401, #"{"error":{"code":"token_expired","message":"The bearer token has expired."}}"#)

    /// Whether `request` carries the fixture token.
    static func isAuthorized(_ request: StubHTTPServer.Request) -> Bool {
        request.header("Authorization") == "Bearer \(token)"
    }
}
