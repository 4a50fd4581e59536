import Foundation
import IssuerdClient
import Testing

@Suite("Status codes to IssuerdClientError")
struct ErrorMappingTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let status: Int
        let body: String
        let headers: [String: String]
        let code: IssuerdClientError.Code
        var testDescription: String { "\(status) → \(code)" }

        init(_ status: Int, _ body: String, headers: [String: String] = [:], _ code: IssuerdClientError.Code) {
            self.status = status
            self.body = body
            self.headers = headers
            self.code = code
        }
    }

    static let cases: [Case] = [
        Case(401, #"{"error":{"code":"unauthenticated","message":"No token."}}"#, .unauthenticated),
        Case(403, #"{"error":{"code":"card_not_eligible","message":"No."}}"#, .forbidden),
        Case(404, #"{"error":{"code":"not_found","message":"Unknown card."}}"#, .notFound),
        Case(409, #"{"error":{"code":"idempotency_key_reused","message":"Other body."}}"#, .conflict),
        Case(
            422, #"{"error":{"code":"certificate_chain_invalid","message":"x","detail":"expired"}}"#,
            .invalidCertificateChain),
        Case(
            429, #"{"error":{"code":"rate_limited","message":"Slow down."}}"#, headers: ["Retry-After": "7"], .throttled
        ),
        Case(400, #"{"error":{"code":"malformed_json","message":"x"}}"#, .badRequest),
        Case(413, "", .badRequest),
        Case(500, #"{"error":{"code":"internal","message":"x","requestId":"req-from-body"}}"#, .server),
        Case(503, #"{"error":{"code":"database_unavailable","message":"x"}}"#, .server),
        Case(200, "not json", .invalidResponse),
        Case(302, "", .invalidResponse),
    ]

    @Test(arguments: cases)
    func mapsStatus(_ testCase: Case) async throws {
        try await withStubServer { _, _ in
            .respond(status: testCase.status, headers: testCase.headers, body: Data(testCase.body.utf8))
        } body: { server in
            let client = ClientFixtures.client(for: server, retry: .never)
            let error = await #expect(throws: IssuerdClientError.self) { try await client.cards() }
            #expect(error?.code == testCase.code)
            if testCase.status >= 400 { #expect(error?.status == testCase.status) }
            #expect(error.map { !String(describing: $0).contains(ClientFixtures.token) } == true)
            #expect(error?.requestId != nil)
        }
    }

    @Test func throttledCarriesRetryAfter() async throws {
        try await withStubServer { _, _ in
            .json(429, #"{"error":{"code":"rate_limited","message":"x"}}"#, headers: ["Retry-After": "7"])
        } body: { server in
            let error = await #expect(throws: IssuerdClientError.self) {
                try await ClientFixtures.client(for: server).cards()
            }
            #expect(error?.retryAfter == .seconds(7))
            // The server asked the app to slow down: no automatic retry.
            #expect(server.requests.count == 1)
        }
    }

    @Test func serverErrorCarriesItsCodeAndTheServersRequestId() async throws {
        try await withStubServer { _, _ in
            .json(500, #"{"error":{"code":"internal","message":"x"}}"#, headers: ["X-Request-Id": "srv-req-9"])
        } body: { server in
            let error = await #expect(throws: IssuerdClientError.self) {
                try await ClientFixtures.client(for: server).cards()
            }
            #expect(error?.code == .server)
            #expect(error?.serverCode == "internal")
            #expect(error?.requestId == "srv-req-9")
            #expect(error.map { String(describing: $0).contains("srv-req-9") } == true)
        }
    }

    @Test func transportFailureIsTypedAndSafeToPrint() async throws {
        // A port held by a bound socket that never listens: connections are refused for as long
        // as the socket is open. (A stub stopped just before could see its freed port taken by
        // another suite's stub running in parallel, which would then answer.)
        let refusing = try RefusingPort()
        defer { refusing.close() }
        let client = ClientFixtures.client(baseURL: URL(string: "http://127.0.0.1:\(refusing.port)")!, retry: .never)
        let error = await #expect(throws: IssuerdClientError.self) { try await client.cards() }
        #expect(error?.code == .transport)
        #expect(error?.underlying != nil)
        #expect(
            error.map {
                !String(describing: $0).contains(ClientFixtures.token) && !String(describing: $0).contains("127.0.0.1")
            } == true)
    }
}
