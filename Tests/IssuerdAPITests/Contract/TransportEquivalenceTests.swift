import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The same requests, in process through the router and over a loopback socket, get the same
/// answers: what lets most suites run in process while the server's own suites use the wire.
@Suite("One test body, two transports")
struct TransportEquivalenceTests {
    /// Status, error code and whether `X-Request-Id` came back, for a fixed series of requests
    /// that crosses each decision the server makes before the handler runs.
    private static func answers(over transport: TestTransport) throws -> [String] {
        let app = try TestApplication(environment: ["ISSUERD_BODY_LIMIT": "2048"], transport: transport)
        let admin = try app.apiKey(role: .admin)
        let body = DecisionFixtures.authorizeBody()
        var requests: [(String, HTTPTestClient.Request)] = [
            ("health", .init("GET", "/healthz")),
            ("unknown route", .init("GET", "/v1/nothing-here")),
            ("method not allowed", .init("DELETE", "/healthz")),
            ("unknown method", .init("BREW", "/healthz")),
            ("no credential", .init("POST", "/v1/admin/customers", body: Array("{}".utf8))),
            (
                "over the body limit",
                .init(
                    "POST", "/v1/admin/customers", headers: AdminFixtures.bearer(admin),
                    body: Array(repeating: UInt8(ascii: " "), count: 4096))
            ),
            (
                "malformed JSON",
                .init(
                    "POST", "/v1/admin/customers",
                    headers: AdminFixtures.bearer(admin).merging(["Content-Type": "application/json"]) { $1 },
                    body: Array("{\"customerId\":".utf8))
            ),
            (
                "customer created",
                .init(
                    "POST", "/v1/admin/customers",
                    headers: AdminFixtures.bearer(admin).merging(["Content-Type": "application/json"]) { $1 },
                    body: Array("{\"customerId\":\"cust-transport\"}".utf8))
            ),
            (
                "query decoded",
                .init("GET", "/v1/admin/cards/no%20such%20card?x=a+b", headers: AdminFixtures.bearer(admin))
            ),
        ]
        requests.append(
            (
                "signed TSP call",
                .init(
                    "POST", "/v1/tsp/tokenization/authorize",
                    headers: ["Content-Type": "application/json", "X-Issuerd-Signature": try app.tspSignature(body)],
                    body: Array(body.utf8))
            ))
        return try requests.map { label, request in
            let response = try app.client.send(
                request.method, request.path, headers: request.headers, body: request.body)
            let code = response.errorEnvelope()?["code"] as? String ?? "-"
            let echoed = response.header("X-Request-Id") != nil
            return "\(label): \(response.status) \(code) requestId=\(echoed)"
        }
    }

    @Test("Router and socket answer a request series alike")
    func sameAnswers() throws {
        let inProcess = try Self.answers(over: .router)
        let overTheWire = try Self.answers(over: .live)
        #expect(inProcess == overTheWire)
        // The series reaches each branch it is meant to (a series of 404s would also be equal).
        #expect(inProcess.contains { $0.hasPrefix("over the body limit: 413") })
        #expect(inProcess.contains { $0.hasPrefix("no credential: 401") })
        #expect(inProcess.contains { $0.hasPrefix("customer created: 201") })
        #expect(inProcess.contains { $0.hasPrefix("unknown method: 501") })
        #expect(inProcess.allSatisfy { $0.hasSuffix("requestId=true") })
    }

    @Test("Concurrent requests in process overlap, as they do over the wire")
    func concurrentInProcess() throws {
        let app = try TestApplication(transport: .router)
        #expect(app.client.isInProcess)
        let results = app.client.sendConcurrently(Array(repeating: .init("GET", "/readyz"), count: 8))
        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
    }
}
