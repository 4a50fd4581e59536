import Foundation
import IssuerdCore

/// A tiny HTTP receiver on 127.0.0.1 for the outbound webhooks (test-only): it records every
/// request and answers with the status the test chooses, so a test can play a receiver that
/// is down for a while. It reads just enough HTTP/1.1 for the dispatcher's POSTs (headers,
/// `Content-Length` body) and closes every connection. It takes one connection at a time unless
/// made `concurrent`; then a ``gate(_:)`` may hold a request until the test lets it go, and
/// ``events`` tells when each request arrived and was answered.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var path: String
        var headers: [String: String]
        var body: [UInt8]

        func header(_ name: String) -> String? { headers[name.lowercased()] }
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
    }

    let port: Int
    private let listener: Int32
    private let concurrent: Bool
    // Guarded by Lock: received requests, the status to answer, and the stop flag.
    private let state = Lock(State())

    private struct State {
        var received: [Received] = []
        var status = 200
        var delay: Double = 0
        var stopped = false
        var gate: (@Sendable (Received) -> Void)?
        var events: [String] = []
    }

    /// - Parameter concurrent: Each connection on its own thread, so several requests are in
    ///   hand at once.
    init(concurrent: Bool = false) throws {
        self.concurrent = concurrent
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else { throw TestFailure("bind/listen failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    var url: String { "http://127.0.0.1:\(port)" }

    /// The status answered from now on (e.g. 503 while "down").
    func answer(_ status: Int, delay: Double = 0) {
        state.withLock {
            $0.status = status
            $0.delay = delay
        }
    }

    var received: [Received] { state.withLock { $0.received } }

    /// `arrived KEY` when a request's body is read, `answered KEY` just before its answer is
    /// written (KEY: its `Idempotency-Key`), in the order they happened.
    var events: [String] { state.withLock { $0.events } }

    /// Runs `body` with each request once it is read and before it is answered (on the
    /// request's own thread when `concurrent`): it may block to hold the answer back.
    func gate(_ body: @escaping @Sendable (Received) -> Void) {
        state.withLock { $0.gate = body }
    }

    /// Polls until `condition` holds for the received requests, at most `timeout` seconds.
    @discardableResult
    func wait(timeout: Double = 30, until condition: ([Received]) -> Bool) -> [Received] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let current = received
            if condition(current) { return current }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return received
    }

    func stop() {
        let wasStopped = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return state.stopped
        }
        if !wasStopped {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    private func acceptLoop() {
        while !state.withLock({ $0.stopped }) {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if state.withLock({ $0.stopped }) { return }
                continue
            }
            if concurrent {
                Thread { [self] in handle(client) }.start()
            } else {
                handle(client)
            }
        }
    }

    private func handle(_ client: Int32) {
        defer { close(client) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var headerEnd: Int?
        var contentLength = 0
        while true {
            let count = read(client, &chunk, chunk.count)
            guard count > 0 else { return }
            buffer += chunk[0..<count]
            if headerEnd == nil, let range = Self.find([13, 10, 13, 10], in: buffer) {
                headerEnd = range + 4
                let head = String(decoding: buffer[0..<range], as: UTF8.self)
                for line in head.split(separator: "\r\n").dropFirst() {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    if parts.count == 2, parts[0].lowercased() == "content-length" {
                        contentLength = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
                    }
                }
            }
            if let headerEnd, buffer.count >= headerEnd + contentLength { break }
        }
        guard let headerEnd else { return }
        let head = String(decoding: buffer[0..<(headerEnd - 4)], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        let path = requestLine.count > 1 ? String(requestLine[1]) : "/"
        let request = Received(
            path: path, headers: headers, body: Array(buffer[headerEnd..<(headerEnd + contentLength)]))
        let key = request.header("Idempotency-Key") ?? "-"
        let (status, delay, gate) = state.withLock { state in
            state.events.append("arrived \(key)")
            return (state.status, state.delay, state.gate)
        }
        gate?(request)
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        state.withLock { state in
            // Recorded only when accepted, like a receiver that stores what it acknowledged.
            if status / 100 == 2 { state.received.append(request) }
            state.events.append("answered \(key)")
        }
        let response = "HTTP/1.1 \(status) X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        _ = Array(response.utf8).withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count) where Array(haystack[index..<(index + needle.count)]) == needle
        { return index }
        return nil
    }
}

/// A test precondition that did not hold.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
