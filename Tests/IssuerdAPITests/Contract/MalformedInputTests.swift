import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("Malformed input against every POST route: 4xx, never 5xx, never a dropped connection")
struct MalformedInputTests {
    /// Path parameters filled with values that exist where the harness can make them exist.
    private func fill(_ pattern: String, card: String) -> String {
        var path = pattern
        let values = [
            "cardId": card, "attemptId": UUID().uuidString, "messageId": "1", "challengeId": UUID().uuidString,
        ]
        while let open = path.firstIndex(of: "{"), let close = path[open...].firstIndex(of: "}") {
            let name = String(path[path.index(after: open)..<close])
            path.replaceSubrange(open...close, with: values[name] ?? "x")
        }
        return path
    }

    @Test("Hundreds of generated bad requests per route; the server stays healthy and records no 5xx")
    func malformedInputs() throws {
        // Over the wire: a dropped connection and the server's 5xx count only show there.
        let app = try TestApplication(transport: .live)
        let admin = try app.apiKey(role: .admin)
        try AdminFixtures.registerCard(app, adminKey: admin, customer: "mal-customer", card: "mal-card", serial: 77)
        let appToken = try app.appToken(customer: "mal-customer")
        let routes = app.application.routes.filter { $0.method == "POST" }
        #expect(!routes.isEmpty)
        let now = Date()
        var total = 0

        for (routeIndex, route) in routes.enumerated() {
            let path = fill(route.pattern, card: "mal-card")
            func request(_ body: [UInt8], contentType: String?) throws -> HTTPTestClient.Request {
                var headers: [String: String] = [:]
                if let contentType { headers["Content-Type"] = contentType }
                if path.hasPrefix("/v1/admin/") {
                    headers["Authorization"] = "Bearer \(admin)"
                } else if path.hasPrefix("/v1/tsp/") {
                    // The signature covers the body and time, not the path: a distinct time per
                    // route keeps the replay guard from refusing a body another route already got.
                    let signed = now.addingTimeInterval(-Double(routeIndex))
                    headers["X-Issuerd-Signature"] = try TSPAuthenticator.sign(
                        body: body, secret: app.tspSecret, timestamp: Int64(signed.timeIntervalSince1970))
                } else {
                    headers["Authorization"] = "Bearer \(appToken)"
                }
                return HTTPTestClient.Request("POST", path, headers: headers, body: body)
            }

            // Calibration: a route that accepts `{}` needs no field (or reads no body), so only
            // "never 5xx" applies to it; every other route must refuse every strict case.
            let probe = try app.client.send(
                "POST", path, headers: try request(Array("{}".utf8), contentType: "application/json").headers,
                body: Array("{}".utf8))
            let needsFields = (400..<500).contains(probe.status)
            #expect(probe.status < 500, "\(route.method) \(route.pattern) answered \(probe.status) to {}")

            let strict = MalformedBodies.strict
            let mutations = MalformedBodies.mutations + MalformedBodies.lenientSyntax
            let cases = strict.map { ($0, needsFields) } + mutations.map { ($0, false) }
            let requests = try cases.map { try request($0.0.body, contentType: $0.0.contentType) }
            for start in stride(from: 0, to: requests.count, by: 16) {
                let end = min(start + 16, requests.count)
                let results = app.client.sendConcurrently(Array(requests[start..<end]))
                for (offset, result) in results.enumerated() {
                    let (testCase, mustRefuse) = cases[start + offset]
                    let context = "\(route.method) \(route.pattern) [\(testCase.label)]"
                    switch result {
                    case .failure(let error):
                        Issue.record("\(context): no HTTP answer: \(error)")
                    case .success(let response):
                        #expect(response.status < 500, "\(context): \(response.status) \(response.text.prefix(200))")
                        if mustRefuse {
                            #expect((400..<500).contains(response.status), "\(context): \(response.status)")
                        }
                        if response.status >= 400 {
                            #expect(response.errorEnvelope()?["code"] is String, "\(context): no error envelope")
                        }
                    }
                }
            }
            total += requests.count
        }
        #expect(total >= 300)

        #expect(try app.client.get("/healthz").status == 200)
        #expect(try app.client.get("/readyz").status == 200)
        #expect(try app.client.get("/v1/admin/cards/mal-card", headers: AdminFixtures.bearer(admin)).status == 200)
        let metrics = try app.client.get("/metrics").text
        let serverErrors = metrics.split(separator: "\n").filter {
            $0.hasPrefix("issuerd_http_requests_total") && $0.contains("status=\"5")
        }
        #expect(serverErrors.isEmpty, "\(serverErrors)")
    }
}
