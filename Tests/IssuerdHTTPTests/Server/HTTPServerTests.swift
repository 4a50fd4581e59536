import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdHTTP

/// The server over real sockets on 127.0.0.1, one server per test.
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

    @Test func declaredContentLengthOverTheLimitIs413BeforeTheBodyIsSent() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(TestServer.bodyLimit + 1)\r\nExpect: 100-continue\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(response.errorEnvelope()?["code"] as? String == "payload_too_large")
        #expect(response.header("X-Request-Id") != nil)

        let viaClient = try test.client.send("POST", "/echo", body: Array(repeating: 0x61, count: TestServer.bodyLimit + 1))
        #expect(viaClient.status == 413)
    }

    @Test func chunkedBodyOverTheLimitIs413() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        try connection.sendChunked(Array(repeating: 0x62, count: TestServer.bodyLimit + 10), chunkSize: 1000)
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(response.errorEnvelope()?["code"] as? String == "payload_too_large")
        #expect(try test.client.get("/v1/cards/after").status == 200)
    }

    @Test func aBodyFarPastTheLimitIsCutOffAndTheServerKeepsServing() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        let huge = Array(repeating: UInt8(0x63), count: TestServer.bodyLimit + ServerContext.discardAllowance + 64 * 1024)
        // The server closes the connection part-way, so the send may fail; either way no response.
        _ = try? connection.sendChunked(huge, chunkSize: 16 * 1024)
        #expect((try? connection.readResponse()) == nil)
        #expect(try test.client.get("/v1/cards/after").status == 200)
    }

    @Test func chunkedBodyInPiecesWithPausesArrivesWhole() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let body = Array((0..<TestServer.bodyLimit).map { UInt8(ascii: "a") + UInt8($0 % 26) })
        let connection = try RawHTTPConnection(port: test.port)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        try connection.sendChunked(body, chunkSize: 700, pause: .milliseconds(20))
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.jsonObject()?["bytes"] as? Int == body.count)
        #expect(response.jsonObject()?["text"] as? String == String(decoding: body, as: UTF8.self))
    }

    @Test func slowUploadTrickledOverASecondIsAnsweredCorrectly() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let body = Array(#"{"nonce":"slow-nonce","device":{"id":"dev-1"}}"#.utf8)
        let connection = try RawHTTPConnection(port: test.port)
        try connection.send("POST /v1/cards/c-slow/apple-pay/provision HTTP/1.1\r\nHost: x\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n")
        try connection.sendSlowly(body, pieceSize: 2, pause: .milliseconds(40))
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.jsonObject()?["nonce"] as? String == "slow-nonce")
        #expect(response.jsonObject()?["deviceId"] as? String == "dev-1")
        #expect(response.jsonObject()?["cardId"] as? String == "c-slow")
    }

    @Test func unsupportedMediaTypeAndMalformedJSONOverTheWire() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let path = "/v1/cards/c1/apple-pay/provision"

        let text = try test.client.send("POST", path, headers: ["Content-Type": "text/plain"], body: Array("{}".utf8))
        #expect(text.status == 415)
        #expect(text.errorEnvelope()?["code"] as? String == "unsupported_media_type")

        let broken = try test.client.postJSON(path, #"{"nonce": "n", "device": "#)
        #expect(broken.status == 400)
        #expect(broken.errorEnvelope()?["code"] as? String == "malformed_json")

        let missing = try test.client.postJSON(path, #"{"nonce": "n", "device": {}}"#)
        #expect(missing.status == 400)
        #expect(missing.errorEnvelope()?["field"] as? String == "device.id")

        let good = try test.client.postJSON(path, #"{"nonce": "n", "device": {"id": "d"}}"#, headers: ["Content-Type": "application/json; charset=utf-8"])
        #expect(good.status == 200)
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

    @Test func sixtyFourConcurrentRequestsAreAllAnswered() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let requests = (0..<64).map { HTTPTestClient.Request("GET", "/v1/cards/card-\($0)", headers: ["X-Request-Id": "c-\($0)"]) }
        let results = test.client.sendConcurrently(requests)
        #expect(results.count == 64)
        for (index, result) in results.enumerated() {
            let response = try result.get()
            #expect(response.status == 200)
            #expect(response.jsonObject()?["cardId"] as? String == "card-\(index)")
            #expect(response.header("X-Request-Id") == "c-\(index)")
        }
        let total = test.metrics.value(of: "issuerd_http_requests_total", labels: ["/v1/cards/{cardId}", "GET", "200"])
        #expect(total == 64)
    }

    @Test func sixtyFourConnectionsHeldOpenAtOnceAreAllAnswered() throws {
        let test = try TestServer(threads: 2)
        defer { test.server.shutdown() }
        let connections = try (0..<64).map { _ in try RawHTTPConnection(port: test.port) }
        for (index, connection) in connections.enumerated() {
            try connection.send("GET /v1/cards/raw-\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
        }
        for (index, connection) in connections.enumerated() {
            let response = try connection.readResponse()
            #expect(response.status == 200)
            #expect(response.jsonObject()?["cardId"] as? String == "raw-\(index)")
        }
    }

    @Test func accessLogLineIsJSONWithEveryField() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        _ = try test.client.send("POST", "/echo?secret=not-logged", headers: ["X-Request-Id": "log-1"], body: Array("hello".utf8))
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

    @Test func shutdownLetsASlowRequestFinishAndThenRefusesConnections() throws {
        let gate = Gate()
        let test = try TestServer(gate: gate)
        let port = test.port
        let connection = try RawHTTPConnection(port: port)
        try connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(gate.waitUntilEntered())

        let stopped = DispatchSemaphore(value: 0)
        let server = test.server
        DispatchQueue.global().async {
            server.shutdown(timeout: .seconds(20))
            stopped.signal()
        }
        // New connections are refused as soon as shutdown has begun, while /slow is still held.
        var refusing = false
        for _ in 0..<2000 where !refusing {
            refusing = !RawHTTPConnection.canConnect(port: port)
            if !refusing { usleep(5_000) }
        }
        #expect(refusing)
        #expect(stopped.wait(timeout: .now()) == .timedOut, "shutdown returned while a request was in flight")

        gate.release()
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "finished")
        #expect(stopped.wait(timeout: .now() + 30) == .success)
        #expect(!RawHTTPConnection.canConnect(port: port))
        server.shutdown()  // idempotent
    }

    @Test func startTwiceAndATakenPortAreClearErrors() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        #expect(throws: HTTPServerError.self) { try test.server.start() }

        let clash = HTTPServer(
            configuration: HTTPServerConfiguration(listen: try ListenAddress.parse("127.0.0.1:\(test.port)"), threadCount: 2),
            router: Router(), logger: .silent, metrics: MetricsRegistry())
        #expect {
            try clash.start()
        } throws: { error in
            (error as? HTTPServerError)?.code == .socketFailed && "\(error)".contains("bind")
        }
        #expect(throws: HTTPServerError.self) {
            try HTTPServer(configuration: HTTPServerConfiguration(threadCount: 0), router: Router(), logger: .silent, metrics: MetricsRegistry()).start()
        }
    }

    @Test func ipv6LoopbackWorksWhenAvailable() throws {
        var router = Router()
        router.add(.get, "/healthz") { request in .text(request.remoteAddress ?? "-") }
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(listen: try ListenAddress.parse("[::1]:0"), threadCount: 2),
            router: router, logger: .silent, metrics: MetricsRegistry())
        do {
            try server.start()
        } catch let error as HTTPServerError where error.message.contains("Cannot assign requested address") {
            return  // the machine has no IPv6 loopback; nothing to test
        }
        defer { server.shutdown() }
        let connection = try RawHTTPConnection(port: server.port, host: "::1")
        try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "::1")
    }
}
