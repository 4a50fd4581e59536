import Dispatch
import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdHTTP

/// A streamed body (``StreamedBody``) is sent while its producer writes it: the client reads the
/// first bytes before the last are written, the producer waits while the client does not read,
/// stops once the client is gone, and a body that fails half way never looks complete.
@Suite struct HTTPServerStreamedBodyTests {
    /// One line of the long bodies, 100 bytes with its line end.
    static let line = String(repeating: "x", count: 99) + "\n"

    private func server(_ log: CapturingLogHandler, _ add: (inout Router) -> Void) throws -> HTTPServer {
        var router = Router()
        add(&router)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(listen: try ListenAddress.parse("127.0.0.1:0"), threadCount: 2),
            router: router, logger: log.logger("issuerd.http", level: .info), metrics: MetricsRegistry())
        try server.start()
        return server
    }

    @Test func theFirstBytesArriveBeforeTheProducerEndsAndTheWholeBodyAfter() throws {
        let gate = Gate()
        let log = CapturingLogHandler()
        // A buffer of 1 KiB against 200 KB written after the gate: the producer waits on the
        // client many times over.
        let server = try server(log) { router in
            router.add(.get, "/stream") { _ in
                .streamed(
                    StreamedBody(capacity: 1024) { body in
                        try body.write("first\n")
                        gate.pass()
                        for _ in 0..<2_000 { try body.write(Self.line) }
                    }, contentType: "text/plain")
            }
        }
        defer { server.shutdown() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        // The producer is held at the gate, after its first line: that line arrives meanwhile.
        #expect(gate.waitUntilEntered())
        try connection.receive(until: "first\n")
        gate.release()
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.header("Transfer-Encoding")?.lowercased() == "chunked")
        #expect(response.header("Content-Length") == nil)
        #expect(response.text == "first\n" + String(repeating: Self.line, count: 2_000))
        // The connection serves the next request.
        try connection.send("GET /missing HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try connection.readResponse().status == 404)
    }

    @Test func aClientThatGoesAwayStopsTheProducer() throws {
        let stopped = DispatchSemaphore(value: 0)
        let log = CapturingLogHandler()
        let server = try server(log) { router in
            router.add(.get, "/endless") { _ in
                .streamed(
                    StreamedBody(capacity: 1024) { body in
                        defer { stopped.signal() }
                        while true { try body.write(Self.line) }
                    }, contentType: "text/plain")
            }
        }
        defer { server.shutdown() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.send("GET /endless HTTP/1.1\r\nHost: x\r\n\r\n")
        try connection.receive(until: Self.line)
        connection.close()
        #expect(stopped.wait(timeout: .now() + 30) == .success)
    }

    @Test func aProducerThatFailsEndsTheBodyIncompleteAndIsLogged() throws {
        struct Broken: Error {}
        let log = CapturingLogHandler()
        let server = try server(log) { router in
            router.add(.get, "/broken") { _ in
                .streamed(
                    StreamedBody { body in
                        try body.write("partial\n")
                        throw Broken()
                    }, contentType: "text/plain")
            }
        }
        defer { server.shutdown() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.send("GET /broken HTTP/1.1\r\nHost: x\r\n\r\n")
        // No last chunk: the client sees the connection close inside the body.
        #expect(throws: TestHTTPError.self) { try connection.readResponse() }
        server.shutdown()
        #expect(log.jsonLines().contains { $0["msg"] as? String == "streamed response failed" })
    }

    @Test func shutdownEndsAStreamWaitingForItsProducer() throws {
        let gate = Gate()
        let log = CapturingLogHandler()
        let server = try server(log) { router in
            router.add(.get, "/held") { _ in
                .streamed(
                    StreamedBody { body in
                        try body.write("first\n")
                        gate.pass()
                        try body.write("never read\n")
                    }, contentType: "text/plain")
            }
        }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.send("GET /held HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(gate.waitUntilEntered())
        try connection.receive(until: "first\n")
        // The connection waits suspended for bytes; stopping resumes and closes it.
        server.shutdown(timeout: .milliseconds(200))
        #expect(connection.isClosedByServer(waiting: .seconds(10)))
        gate.release()
    }

    @Test func inProcessTheBodyIsCollectedWhole() throws {
        var router = Router()
        router.add(.get, "/stream") { _ in
            .streamed(
                StreamedBody(capacity: 16) { body in
                    for _ in 0..<100 { try body.write(Self.line) }
                }, contentType: "text/plain")
        }
        let response = router.exchange(method: "GET", target: "/stream", headers: [:], body: [], bodyLimit: 1024)
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == String(repeating: Self.line, count: 100))
        #expect(response.headers["Content-Length"] == "10000")
    }
}
