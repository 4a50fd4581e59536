import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdHTTP

/// Route work runs on handler threads while its connection waits suspended, so that what must
/// never wait (`/healthz`) is answered on the network thread even when every handler is busy
/// (for instance waiting on a database that stopped answering).
@Suite struct HTTPServerHandlerThreadsTests {
    private func server(gate: Gate, threads: Int, networkThreads: Int? = nil) throws -> HTTPServer {
        var router = Router()
        router.add(.get, "/healthz", inline: true) { _ in .text("ok") }
        router.add(.get, "/slow") { _ in
            gate.pass()
            return .text("finished")
        }
        router.add(.get, "/quick") { _ in .text("quick") }
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(
                listen: try ListenAddress.parse("127.0.0.1:0"), threadCount: threads,
                networkThreadCount: networkThreads),
            router: router, logger: .silent, metrics: MetricsRegistry())
        try server.start()
        return server
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let (whole, fraction) = (ContinuousClock.now - start).components
        return Double(whole) + Double(fraction) / 1e18
    }

    /// With one network thread (libmicrohttpd's internal thread alone) and with a pool of them.
    @Test(arguments: [1, 2])
    func anInlineRouteIsAnsweredWhileEveryHandlerThreadWaits(networkThreads: Int) throws {
        let gate = Gate()
        let server = try server(gate: gate, threads: 2, networkThreads: networkThreads)
        defer { server.shutdown() }
        let held = try (0..<2).map { _ in try RawHTTPConnection(port: server.port) }
        for connection in held { try connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n") }
        #expect(gate.waitUntilEntered())
        #expect(gate.waitUntilEntered())

        // On new connections, whichever network thread takes them: every /healthz at once.
        var slowest = 0.0
        for _ in 0..<8 {
            let start = ContinuousClock.now
            let connection = try RawHTTPConnection(port: server.port)
            try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try connection.readResponse()
            slowest = max(slowest, seconds(since: start))
            #expect(response.status == 200)
            #expect(response.text == "ok")
        }
        #expect(slowest < 1.0, "/healthz took \(slowest) s while the handlers were busy")

        // A routed request waits its turn and is answered once a handler is free.
        let queued = try RawHTTPConnection(port: server.port)
        try queued.send("GET /quick HTTP/1.1\r\nHost: x\r\n\r\n")
        gate.release()
        gate.release()
        for connection in held {
            let response = try connection.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "finished")
        }
        #expect(try queued.readResponse().text == "quick")
    }

    @Test func shutdownClosesAConnectionWhoseHandlerOutlivesTheGracePeriod() throws {
        let gate = Gate()
        let server = try server(gate: gate, threads: 2)
        let connection = try RawHTTPConnection(port: server.port)
        try connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(gate.waitUntilEntered())
        let start = ContinuousClock.now
        server.shutdown(timeout: .milliseconds(200))
        #expect(seconds(since: start) < 3)
        // Closed without an answer, as before handlers had threads of their own.
        #expect(connection.readToEnd().isEmpty)
        // The handler ends later; its answer goes nowhere.
        gate.release()
        Thread.sleep(forTimeInterval: 0.2)
    }
}
