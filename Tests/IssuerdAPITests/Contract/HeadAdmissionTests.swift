import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Every route that takes a body has its caller's credential checked on the request head, before
/// the body is read: a request without it is refused with 401 while its body is still unsent
/// (`Expect: 100-continue`), so an unauthenticated client cannot make the server keep a body.
@Suite("Credentials checked on the head, before the body")
struct HeadAdmissionTests {
    /// The answer to a head announcing a 900 KB body and waiting for leave to send it.
    private static func answerToHead(
        _ app: TestApplication, _ path: String, _ credential: String
    ) throws -> TestHTTPResponse {
        let connection = try RawHTTPConnection(port: app.application.port, timeout: 5)
        try connection.send(
            "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\(credential)"
                + "Content-Length: 900000\r\nExpect: 100-continue\r\n\r\n")
        return try connection.readResponse()
    }

    @Test("Without its caller group's credential every POST route answers 401 on the head")
    func everyPostRouteChecksItsCredentialFirst() throws {
        let app = try TestApplication()
        let stale = try app.tspSignature("{}", at: Date().addingTimeInterval(-3600))
        let century = try app.appToken(customer: "c1", lifetime: 100 * 365 * 86_400)
        let routes = app.application.routes.filter { $0.method == "POST" && $0.pattern.hasPrefix("/v1/") }
        #expect(routes.count >= 10)
        for route in routes {
            let path = route.pattern.replacingOccurrences(of: #"\{[^}]+\}"#, with: "x", options: .regularExpression)
            var credentials = ["", "Authorization: Bearer not-a-credential\r\n"]
            if path.hasPrefix("/v1/tsp/") { credentials.append("X-Issuerd-Signature: \(stale)\r\n") }
            if path.hasPrefix("/v1/cards/") || path.hasPrefix("/v1/wallet/") {
                credentials.append("Authorization: Bearer \(century)\r\n")
            }
            for credential in credentials {
                let response = try Self.answerToHead(app, path, credential)
                #expect(response.status == 401, "\(path) with '\(credential)'")
                #expect(response.errorEnvelope()?["code"] as? String == "unauthenticated", "\(path)")
                #expect(response.header("Cache-Control") == "no-store", "\(path)")
            }
        }
        #expect(try app.client.get("/healthz").status == 200)
    }

    @Test("With a credential of the right form the body is asked for (100 Continue)")
    func aCredentialOfTheRightFormGetsToSendItsBody() throws {
        let app = try TestApplication()
        let heads = [
            ("/v1/cards/x/apple-pay/provision", "Authorization: Bearer \(try app.appToken(customer: "c1"))\r\n"),
            ("/v1/tsp/tokenization/authorize", "X-Issuerd-Signature: \(try app.tspSignature("{}"))\r\n"),
            ("/v1/admin/customers", "Authorization: Bearer isk_0_unknown\r\n"),
        ]
        for (path, credential) in heads {
            #expect(try Self.answerToHead(app, path, credential).status == 100, "\(path)")
        }
    }
}
