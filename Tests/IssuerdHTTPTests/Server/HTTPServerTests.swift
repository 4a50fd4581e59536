import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdHTTP

/// The server over real sockets on 127.0.0.1: routing, errors, request ids, logs, metrics.
@Suite struct HTTPServerTests {
    @Test func routesWithPathParametersQueryAndPercentDecoding() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }

        let card = try test.client.get("/v1/cards/card-7")
        #expect(card.status == 200)
        #expect(card.jsonObject()?["cardId"] as? String == "card-7")
        #expect(card.jsonObject()?["route"] as? String == "/v1/cards/{cardId}")
        #expect(card.header("Content-Type") == "application/json; charset=utf-8")

        let inspect = try test.client.get("/inspect?q=a%20b&plus=a+b&empty=&q=second")
        let query = inspect.jsonObject()?["query"] as? [String: String]
        #expect(query == ["q": "a b", "plus": "a b", "empty": ""])
        #expect(inspect.jsonObject()?["remoteAddress"] as? String == "127.0.0.1")

        let decoded = try test.client.get("/inspect/a%2Db")
        #expect(decoded.jsonObject()?["rest"] as? String == "a-b")

        // libmicrohttpd's own diagnostics land in our log; a clean start and run produces none.
        #expect(test.log.records.filter { $0.level >= .warning }.map(\.message) == [])
    }

    @Test func notFoundAndMethodNotAllowedCarryEnvelopeAndRequestId() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }

        let missing = try test.client.get("/nope", headers: ["X-Request-Id": "trace-404"])
        #expect(missing.status == 404)
        #expect(missing.errorEnvelope()?["code"] as? String == "not_found")
        #expect(missing.header("X-Request-Id") == "trace-404")

        let wrong = try test.client.send("DELETE", "/v1/cards/c1")
        #expect(wrong.status == 405)
        #expect(wrong.header("Allow") == "GET, HEAD")
        #expect(wrong.errorEnvelope()?["code"] as? String == "method_not_allowed")
        #expect(RequestIdentifier.isSane(wrong.header("X-Request-Id") ?? ""))
    }

    @Test func headGetsGetHeadersWithoutBody() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port)
        try connection.send("HEAD /v1/cards/c9 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let head = try connection.readResponse(expectingBody: false)
        let expectedLength = try HTTPResponse.json(["cardId": "c9", "route": "/v1/cards/{cardId}"]).body.count
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == String(expectedLength))
        #expect(connection.readToEnd().isEmpty)
    }

    @Test func handlerFailureIs500WithRequestIdAndTheServerKeepsServing() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let failed = try test.client.get("/boom", headers: ["X-Request-Id": "boom-1"])
        #expect(failed.status == 500)
        #expect(failed.errorEnvelope()?["code"] as? String == "internal_error")
        #expect((failed.errorEnvelope()?["message"] as? String)?.contains("boom-1") == true)
        #expect(!failed.text.contains("hunter2"))
        let errors = test.log.records.filter { $0.level == .error }
        #expect(errors.first?.metadata["error"] == "ProbeFailure(database password=hunter2 rejected)")

        let teapot = try test.client.get("/teapot")
        #expect(teapot.status == 418)
        #expect(teapot.errorEnvelope()?["spout"] as? Bool == true)

        #expect(try test.client.get("/v1/cards/still-up").status == 200)
    }

    @Test func requestIdIsEchoedWhenSaneAndGeneratedOtherwise() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let echoed = try test.client.get("/inspect", headers: ["X-Request-Id": "abc.DEF_123:xyz-9"])
        #expect(echoed.header("X-Request-Id") == "abc.DEF_123:xyz-9")
        #expect(echoed.jsonObject()?["requestId"] as? String == "abc.DEF_123:xyz-9")

        for hostile in ["has spaces", String(repeating: "x", count: 129), "a<script>"] {
            let replaced = try test.client.get("/inspect", headers: ["X-Request-Id": hostile])
            let id = replaced.header("X-Request-Id") ?? ""
            #expect(id != hostile)
            #expect(UUID(uuidString: id) != nil)
            #expect(replaced.jsonObject()?["requestId"] as? String == id)
        }
        let generated = try test.client.get("/inspect")
        #expect(UUID(uuidString: generated.header("X-Request-Id") ?? "") != nil)
    }

    @Test func accessLogLineIsJSONWithEveryField() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        _ = try test.client.send(
            "POST", "/echo?secret=not-logged", headers: ["X-Request-Id": "log-1"], body: Array("hello".utf8))
        let lines = test.log.jsonLines().filter { $0["msg"] as? String == "request" }
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line["level"] as? String == "info")
        #expect(line["logger"] as? String == "issuerd.http")
        #expect(line["method"] as? String == "POST")
        #expect(line["route"] as? String == "/echo")
        #expect(line["path"] as? String == "/echo")
        #expect(line["status"] as? Int == 200)
        #expect(line["requestId"] as? String == "log-1")
        #expect(line["bytesIn"] as? Int == 5)
        #expect((line["bytesOut"] as? Int ?? 0) > 0)
        #expect(line["remote"] as? String == "127.0.0.1")
        #expect((line["durationMs"] as? Double).map { $0 >= 0 } == true)
        let record = try #require(test.log.records.last)
        #expect(!JSONLogHandler.format(record).contains("not-logged"))
    }

    @Test func metricsCountRoutesAndStatusesWithBoundedLabels() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        _ = try test.client.get("/v1/cards/a")
        _ = try test.client.get("/v1/cards/b")
        _ = try test.client.get("/random/\(UUID().uuidString)")
        _ = try test.client.send("BREW", "/v1/cards/a")
        let text = test.metrics.render()
        #expect(text.contains(#"issuerd_http_requests_total{route="/v1/cards/{cardId}",method="GET",status="200"} 2"#))
        #expect(text.contains(#"issuerd_http_requests_total{route="unmatched",method="GET",status="404"} 1"#))
        #expect(text.contains(#"issuerd_http_requests_total{route="unmatched",method="other",status="501"} 1"#))
        #expect(text.contains(#"issuerd_http_request_duration_seconds_count{route="/v1/cards/{cardId}"} 2"#))
        #expect(text.contains(#"issuerd_http_request_duration_seconds_bucket{route="/v1/cards/{cardId}",le="+Inf"} 2"#))
        #expect(!text.contains("/random/"))
    }

    @Test func malformedRequestsAreRefusedAndTheServerKeepsServing() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let garbage = try RawHTTPConnection(port: test.port)
        try garbage.send("THIS IS NOT HTTP\r\n\r\n")
        let refused = try garbage.readResponse()
        #expect((400...599).contains(refused.status))

        let unknownMethod = try RawHTTPConnection(port: test.port)
        try unknownMethod.send("BREW /v1/cards/x HTTP/1.1\r\nHost: x\r\n\r\n")
        let brew = try unknownMethod.readResponse()
        #expect(brew.status == 501)
        #expect(brew.errorEnvelope()?["code"] as? String == "not_implemented")

        #expect(try test.client.get("/v1/cards/fine").status == 200)
    }
}
