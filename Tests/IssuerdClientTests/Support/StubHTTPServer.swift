import Foundation
import IssuerdCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A minimal loopback HTTP/1.1 server for the client tests, standing in for issuerd until the
/// real server exists: it reads a request head up to CRLFCRLF and a `Content-Length` body,
/// records the request, and writes the canned reply its handler picks (or stalls).
///
/// Test-only: the product never parses HTTP itself. One thread per connection, every answer
/// closes its connection, so the parser needs no keep-alive or chunked support.
final class StubHTTPServer: Sendable {
    /// A request as received.
    struct Request: Sendable {
        let method: String
        let path: String
        /// Header names lower-cased.
        let headers: [String: String]
        let body: Data

        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    /// What to do with a request.
    enum Reply: Sendable {
        case respond(status: Int, headers: [String: String], body: Data)
        /// Read the request and never answer, until the client goes away or the stub stops.
        case stall

        static func json(_ status: Int, _ text: String, headers: [String: String] = [:]) -> Reply {
            .respond(
                status: status, headers: headers.merging(["Content-Type": "application/json"]) { $1 },
                body: Data(text.utf8))
        }

        static func json(_ status: Int, encoding value: some Encodable, headers: [String: String] = [:]) -> Reply {
            .respond(
                status: status, headers: headers.merging(["Content-Type": "application/json"]) { $1 },
                body: (try? JSONEncoder().encode(value)) ?? Data())
        }
    }

    /// Picks the reply to the `index`th request (from 0).
    typealias Handler = @Sendable (_ request: Request, _ index: Int) -> Reply

    private struct State {
        var requests: [Request] = []
        var stopped = false
        var threads = 0
    }

    let port: UInt16
    private let listener: Int32
    private let handler: Handler
    private let state = Lock(State())

    /// The URL of the stub's root.
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }

    /// Every request received so far, in arrival order.
    var requests: [Request] { state.withLock { $0.requests } }

    /// Binds 127.0.0.1 on an ephemeral port and starts accepting.
    init(handler: @escaping Handler) throws {
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw StubError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw StubError("bind/listen failed")
        }
        self.listener = fd
        self.port = UInt16(bigEndian: address.sin_port)
        spawn { [self] in acceptLoop() }
    }

    /// Stops accepting, releases stalled connections and waits for every thread to end. The
    /// threads hold the stub, so it lives until this is called: use ``withStubServer(_:body:)``.
    func stop() {
        let first = state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        while state.withLock({ $0.threads }) > 0 { usleep(2_000) }
        close(listener)
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func spawn(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.threads += 1 }
        Thread.detachNewThread { [self] in
            body()
            state.withLock { $0.threads -= 1 }
        }
    }

    /// Waits up to 20 ms for `fd` to become readable, so loops can notice ``stop()``.
    private static func readable(_ fd: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 20) > 0
    }

    private func acceptLoop() {
        while !isStopped {
            guard Self.readable(listener) else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            spawn { [self] in serve(connection) }
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        guard let request = readRequest(fd) else { return }
        let index = state.withLock { state in
            state.requests.append(request)
            return state.requests.count - 1
        }
        switch handler(request, index) {
        case .respond(let status, let headers, let body):
            var head = "HTTP/1.1 \(status) Stub\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            writeAll(fd, Data((head + "\r\n").utf8) + body)
        case .stall:
            // Until the client hangs up (read returns 0) or the test stops the stub.
            var byte: UInt8 = 0
            while !isStopped {
                if Self.readable(fd), recv(fd, &byte, 1, 0) <= 0 { return }
            }
        }
    }

    private func readRequest(_ fd: Int32) -> Request? {
        var buffer = Data()
        let separator = Data("\r\n\r\n".utf8)
        var headEnd: Range<Data.Index>?
        while headEnd == nil {
            guard buffer.count < 65_536, let chunk = readSome(fd) else { return nil }
            buffer.append(chunk)
            headEnd = buffer.range(of: separator)
        }
        guard let headEnd, let head = String(data: buffer[..<headEnd.lowerBound], encoding: .utf8) else { return nil }
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? -1
        guard (0...1_048_576).contains(length) else { return nil }
        if headers["expect"]?.lowercased() == "100-continue" {
            writeAll(fd, Data("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        var body = Data(buffer[headEnd.upperBound...])
        while body.count < length {
            guard let chunk = readSome(fd) else { return nil }
            body.append(chunk)
        }
        return Request(
            method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: body.prefix(length))
    }

    /// Some bytes, or `nil` at end of stream, on error, or when the stub stops.
    private func readSome(_ fd: Int32) -> Data? {
        while !isStopped {
            guard Self.readable(fd) else { continue }
            var chunk = [UInt8](repeating: 0, count: 16_384)
            let count = recv(fd, &chunk, chunk.count, 0)
            return count > 0 ? Data(chunk[..<count]) : nil
        }
        return nil
    }

    private func writeAll(_ fd: Int32, _ data: Data) {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                // MSG_NOSIGNAL: a client that gave up must not kill the test process with SIGPIPE.
                let written = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}

/// A stub set-up failure.
struct StubError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` against a fresh stub and stops the stub afterwards, whatever happens.
func withStubServer<T>(
    _ handler: @escaping StubHTTPServer.Handler, body: (StubHTTPServer) async throws -> T
) async throws -> T {
    let server = try StubHTTPServer(handler: handler)
    defer { server.stop() }
    return try await body(server)
}
