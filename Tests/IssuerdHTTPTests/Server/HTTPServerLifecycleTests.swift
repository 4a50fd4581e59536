import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdHTTP

/// Concurrency, start-up errors and graceful shutdown over real sockets.
@Suite struct HTTPServerLifecycleTests {
    @Test func sixtyFourConcurrentRequestsAreAllAnswered() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let requests = (0..<64).map {
            HTTPTestClient.Request("GET", "/v1/cards/card-\($0)", headers: ["X-Request-Id": "c-\($0)"])
        }
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
            configuration: HTTPServerConfiguration(
                listen: try ListenAddress.parse("127.0.0.1:\(test.port)"), threadCount: 2),
            router: Router(), logger: .silent, metrics: MetricsRegistry())
        #expect {
            try clash.start()
        } throws: { error in
            (error as? HTTPServerError)?.code == .socketFailed && "\(error)".contains("bind")
        }
        #expect(throws: HTTPServerError.self) {
            try HTTPServer(
                configuration: HTTPServerConfiguration(threadCount: 0), router: Router(), logger: .silent,
                metrics: MetricsRegistry()
            ).start()
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
