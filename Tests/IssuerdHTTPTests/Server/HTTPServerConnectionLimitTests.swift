import Foundation
import Glibc
import IssuerdTestSupport
import Testing

@testable import IssuerdHTTP

/// Connection counts and deadlines over real sockets: one address holding many idle or slow
/// connections cannot take the server from another, and a client that trickles its request is
/// cut off at a deadline instead of holding its connection for as long as it keeps sending.
@Suite(.serialized) struct HTTPServerConnectionLimitTests {
    /// Lets this process hold the client ends of a thousand connections and more.
    static func raiseDescriptorLimit(to wanted: Int) throws {
        var limit = rlimit()
        try #require(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        if limit.rlim_cur < rlim_t(wanted) {
            limit.rlim_cur = min(limit.rlim_max, rlim_t(wanted))
            try #require(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        }
        try #require(limit.rlim_cur >= rlim_t(wanted), "the hard descriptor limit is below \(wanted)")
    }

    /// Waits until `connections` held open by the server number `expected`; returns the last count.
    static func settle(_ connections: [RawHTTPConnection], at expected: Int) -> Int {
        let deadline = ContinuousClock.now + .seconds(10)
        var open = -1
        var closed = Set<Int>()
        repeat {
            for (index, connection) in connections.enumerated() where !closed.contains(index) {
                if connection.isClosedByServer() { closed.insert(index) }
            }
            open = connections.count - closed.count
            if open == expected { return open }
            Thread.sleep(forTimeInterval: 0.05)
        } while ContinuousClock.now < deadline
        return open
    }

    @Test func thousandIdleAndHundredSlowConnectionsFromOneAddressLeaveAnotherServed() throws {
        try Self.raiseDescriptorLimit(to: 4096)
        // Deadlines far away: the per-address limit alone must keep the server for others.
        let limits = HTTPServerLimits(
            maxConnections: 512, maxConnectionsPerAddress: 64, headTimeout: .seconds(60), bodyTimeout: .seconds(60))
        let test = try TestServer(limits: limits)
        defer { test.server.shutdown() }

        var held: [RawHTTPConnection] = []
        for _ in 0..<1000 { held.append(try RawHTTPConnection(port: test.port, timeout: 5)) }
        for _ in 0..<100 {
            let slow = try RawHTTPConnection(port: test.port, timeout: 5)
            // A head and the first byte of a body that never comes; refused ones fail to send.
            try? slow.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
            held.append(slow)
        }
        #expect(Self.settle(held, at: 64) == 64, "connections from 127.0.0.1 held by the server")

        let started = ContinuousClock.now
        let other = try RawHTTPConnection(port: test.port, timeout: 5, source: "127.0.0.2")
        try other.send("GET /v1/cards/c-other HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try other.readResponse().status == 200)
        let body = #"{"nonce":"n","device":{"id":"d"}}"#
        try other.send(
            "POST /v1/cards/c-other/apple-pay/provision HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(try other.readResponse().status == 200)
        print("two requests from 127.0.0.2 beside 1,100 connections from 127.0.0.1: \(ContinuousClock.now - started)")
        #expect(test.metrics.render().contains("issuerd_http_connections_refused_total 1036"))
    }

    @Test func perAddressLimitClosesTheExcessAtOnceAndFreesAsConnectionsClose() throws {
        let limits = HTTPServerLimits(maxConnections: 64, maxConnectionsPerAddress: 8, headTimeout: .seconds(60))
        let test = try TestServer(limits: limits)
        defer { test.server.shutdown() }
        var first: [RawHTTPConnection] = []
        for _ in 0..<12 {
            first.append(try RawHTTPConnection(port: test.port, timeout: 5))
            // One at a time, so the eight held are the first eight.
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(Self.settle(first, at: 8) == 8)
        #expect(first.prefix(8).allSatisfy { !$0.isClosedByServer() })
        #expect(first.suffix(4).allSatisfy { $0.isClosedByServer() })
        #expect(
            try RawHTTPConnection(port: test.port, source: "127.0.0.3").isClosedByServer(waiting: .milliseconds(200))
                == false)

        first[0].close()
        first[1].close()
        Thread.sleep(forTimeInterval: 0.2)
        let again = try RawHTTPConnection(port: test.port, timeout: 5)
        try again.send("GET /inspect HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try again.readResponse().status == 200)
    }

    @Test func aHeadTrickledByteByByteIsCutAtItsDeadline() throws {
        let test = try TestServer(limits: HTTPServerLimits(headTimeout: .seconds(1)))
        defer { test.server.shutdown() }
        let trickling = try RawHTTPConnection(port: test.port, timeout: 5)
        let idle = try RawHTTPConnection(port: test.port, timeout: 5)
        try trickling.send("GET /inspect HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        let started = ContinuousClock.now
        var cut = false
        // One byte every 200 ms would keep libmicrohttpd's idle timeout from ever firing.
        while ContinuousClock.now - started < .seconds(6) {
            if (try? trickling.send("a")) == nil || trickling.isClosedByServer(waiting: .milliseconds(200)) {
                cut = true
                break
            }
        }
        #expect(cut, "a head trickled for 6 s was still being read")
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(idle.isClosedByServer(waiting: .seconds(2)), "an idle connection outlived the head deadline")
        #expect(test.metrics.render().contains(#"issuerd_http_connections_closed_total{reason="head_timeout"} 2"#))
    }

    @Test func aKeptAliveConnectionIdleBeyondTheHeadDeadlineIsClosed() throws {
        let test = try TestServer(limits: HTTPServerLimits(headTimeout: .seconds(1)))
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port, timeout: 5)
        for _ in 0..<3 {
            // Within the deadline each time: the deadline restarts with every answer.
            try connection.send("GET /inspect HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try connection.readResponse().status == 200)
            Thread.sleep(forTimeInterval: 0.6)
        }
        #expect(connection.isClosedByServer(waiting: .seconds(2)))
    }

    @Test func aBodyTrickledIsCutAtItsDeadlineAndNeverHandled() throws {
        let test = try TestServer(limits: HTTPServerLimits(bodyTimeout: .seconds(1)))
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port, timeout: 5)
        try connection.send(
            "POST /guarded HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nContent-Length: 100\r\n\r\n")
        let started = ContinuousClock.now
        var cut = false
        while ContinuousClock.now - started < .seconds(8) {
            if (try? connection.send("a")) == nil || connection.isClosedByServer(waiting: .milliseconds(100)) {
                cut = true
                break
            }
        }
        #expect(cut, "a body trickled for 8 s was still being read")
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(test.guardedCalls.value == 0)
        #expect(test.metrics.render().contains(#"issuerd_http_connections_closed_total{reason="body_timeout"} 1"#))
    }

    @Test func aSlowHandlerIsNotCutByTheBodyDeadline() throws {
        let gate = Gate()
        let test = try TestServer(
            gate: gate, limits: HTTPServerLimits(headTimeout: .seconds(1), bodyTimeout: .seconds(1)))
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port, timeout: 10)
        try connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(gate.waitUntilEntered())
        Thread.sleep(forTimeInterval: 2)
        gate.release()
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "finished")
    }
}
