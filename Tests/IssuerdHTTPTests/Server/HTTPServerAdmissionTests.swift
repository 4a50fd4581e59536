import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdHTTP

/// A route's credential checked on the request head, before its body is read: a request
/// without it never has its body kept, nor reaches the handler.
@Suite struct HTTPServerAdmissionTests {
    @Test func aMissingCredentialIsRefusedBeforeTheBodyIsSent() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port, timeout: 5)
        // With `Expect: 100-continue` the client waits for leave to send its body: without a
        // head-time check the server would answer 100 Continue and read it.
        try connection.send(
            "POST /guarded HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n"
                + "Expect: 100-continue\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 401)
        #expect(response.errorEnvelope()?["code"] as? String == "unauthenticated")
        #expect(response.header("X-Request-Id") != nil)
        #expect(test.guardedCalls.value == 0)
    }

    @Test func aBodySentWithoutTheCredentialIsDiscardedUnreadAndAnsweredAtItsEnd() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port, timeout: 5)
        let body = [UInt8](repeating: 0x61, count: 4000)
        try connection.send(
            "POST /guarded HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer forged\r\nContent-Length: \(body.count)\r\n\r\n"
        )
        try connection.sendSlowly(body, pieceSize: 1000, pause: .milliseconds(10))
        let refused = try connection.readResponse()
        #expect(refused.status == 401)
        // The connection stays usable (the body was read to its end), and the credential admits.
        try connection.send(
            "POST /guarded HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nContent-Length: 5\r\n\r\nhello")
        let admitted = try connection.readResponse()
        #expect(admitted.status == 200)
        #expect(admitted.jsonObject()?["bytes"] as? Int == 5)
        // What the admission established reached the handler.
        #expect(admitted.header("X-Admitted")?.hasPrefix("principal of ") == true, "\(admitted.headers)")
        #expect(test.guardedCalls.value == 1)
        #expect(test.log.jsonLines().contains { $0["path"] as? String == "/guarded" && $0["status"] as? Int == 401 })
    }

    @Test func aChunkedBodyWithoutTheCredentialIsRefusedAndABodyFarOverTheLimitAtOnce() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let chunked = try RawHTTPConnection(port: test.port, timeout: 5)
        try chunked.send("POST /guarded HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        try chunked.sendChunked(Array(repeating: 0x62, count: 3000), chunkSize: 500)
        #expect(try chunked.readResponse().status == 401)

        // Declared far past limit and allowance: answered on the head, the connection closed.
        let huge = try RawHTTPConnection(port: test.port, timeout: 5)
        try huge.send("POST /guarded HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
        #expect(try huge.readResponse().status == 401)
        #expect(test.guardedCalls.value == 0)
    }

    @Test func aBodyForNoRouteIsAnsweredOnItsHead() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port, timeout: 5)
        try connection.send(
            "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\nExpect: 100-continue\r\n\r\n")
        #expect(try connection.readResponse().status == 404)
        let wrongMethod = try RawHTTPConnection(port: test.port, timeout: 5)
        try wrongMethod.send("PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\nExpect: 100-continue\r\n\r\n")
        let refused = try wrongMethod.readResponse()
        #expect(refused.status == 405)
        #expect(refused.header("Allow") == "POST")
    }

    @Test func aRequestWithoutABodySkipsTheHeadCheck() throws {
        // The head-time check is only for bodies: a body-less request keeps its connection and
        // is judged by its handler alone (this test route's handler checks nothing).
        let test = try TestServer()
        defer { test.server.shutdown() }
        let response = try test.client.send("POST", "/guarded", body: [])
        #expect(response.status == 200)
        #expect(test.guardedCalls.value == 1)
    }

    @Test func theRouterAdmitsOnTheHeadWithoutSockets() throws {
        var router = Router()
        router.finishing = { _, response in response.headers.set("Cache-Control", "no-store") }
        router.add(.post, "/open") { _ in .noContent() }
        let refuse: Router.Admission = { _ in throw HTTPError(status: 401, code: "unauthenticated", message: "no") }
        router.add(.post, "/closed", admission: refuse) { _ in .noContent() }
        #expect(router.admit(HTTPRequest(method: .post, path: "/open")) == nil)
        let refused = try #require(router.admit(HTTPRequest(method: .post, path: "/closed", requestId: "r-1")))
        #expect(refused.response.status == 401)
        #expect(refused.route == "/closed")
        #expect(refused.response.headers["Cache-Control"] == "no-store")
        #expect(refused.response.headers["X-Request-Id"] == "r-1")
        #expect(router.admit(HTTPRequest(method: .post, path: "/missing"))?.response.status == 404)
    }
}
