import Foundation
import Glibc
import IssuerdCore

/// One TCP connection that writes raw request bytes and reads raw responses, for what
/// `URLSession` cannot do: bodies sent in pieces with pauses, malformed request lines,
/// many connections held open at once.
///
/// Response parsing here is test tooling only; the product never parses HTTP itself.
public final class RawHTTPConnection {
    private var descriptor: Int32
    private var buffer: [UInt8] = []

    /// Connects to `host:port`.
    ///
    /// - Parameters:
    ///   - port: The server's port.
    ///   - host: A numeric IPv4 or IPv6 address (no brackets); IPv4 loopback unless given.
    ///   - timeout: Seconds a read may wait before it fails instead of hanging the test.
    ///   - source: An IPv4 address to connect from (any of 127.0.0.0/8 works on loopback), so a
    ///     test can be another client to the server's per-address accounting.
    /// - Throws: ``TestHTTPError`` when the connection is refused or cannot be made.
    public init(port: Int, host: String = "127.0.0.1", timeout: Int = 30, source: String? = nil) throws {
        let isIPv6 = host.contains(":")
        let fd = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestHTTPError("socket: \(String(cString: strerror(errno)))") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            let bound =
                inet_pton(AF_INET, source, &local.sin_addr) == 1
                && withUnsafePointer(to: &local) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                    }
                }
            guard bound else {
                let reason = String(cString: strerror(errno))
                Glibc.close(fd)
                throw TestHTTPError("bind to \(source): \(reason)")
            }
        }
        let connected: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(truncatingIfNeeded: port).bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
                Glibc.close(fd)
                throw TestHTTPError("invalid IPv6 address \(host)")
            }
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                Glibc.close(fd)
                throw TestHTTPError("invalid IPv4 address \(host)")
            }
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw TestHTTPError("connect to \(host) port \(port): \(reason)")
        }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        descriptor = fd
    }

    deinit {
        close()
    }

    /// Whether a TCP connection to `host:port` is accepted right now.
    public static func canConnect(port: Int, host: String = "127.0.0.1") -> Bool {
        (try? RawHTTPConnection(port: port, host: host)) != nil
    }

    /// Whether the server has closed the connection (or reset it), waiting up to `timeout` for
    /// that to happen; bytes the server sent meanwhile are kept for ``readResponse(expectingBody:)``.
    public func isClosedByServer(waiting timeout: Duration = .zero) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let left = max(deadline - ContinuousClock.now, .zero)
            let milliseconds = Int32(
                left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
            guard poll(&entry, 1, milliseconds) > 0 else { return false }
            var chunk = [UInt8](repeating: 0, count: 16 * 1024)
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return true }
            if count > 0 { buffer += chunk.prefix(count) }
            if ContinuousClock.now >= deadline { return false }
        }
    }

    /// Receives until `marker` has arrived, keeping every byte for
    /// ``readResponse(expectingBody:)``: to see part of a response before its end is sent.
    ///
    /// - Throws: ``TestHTTPError`` on timeout or when the connection closes first.
    public func receive(until marker: String) throws {
        _ = try readUntil(Array(marker.utf8))
    }

    /// Closes the connection; later calls do nothing.
    public func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    /// Writes all of `bytes`. Uses `MSG_NOSIGNAL` so a server that already closed cannot kill
    /// the test process with SIGPIPE.
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glibc.send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw TestHTTPError("send: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    /// Writes `text` as UTF-8.
    public func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    /// Writes `bytes` in pieces of `pieceSize`, pausing between them: a slow client.
    public func sendSlowly(_ bytes: [UInt8], pieceSize: Int, pause: Duration) throws {
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + max(pieceSize, 1), bytes.count)
            try send(Array(bytes[offset..<end]))
            offset = end
            if offset < bytes.count { Thread.sleep(forTimeInterval: pause.timeInterval) }
        }
    }

    /// Writes `body` as HTTP/1.1 chunks of `chunkSize`, pausing between them, then the last chunk.
    public func sendChunked(_ body: [UInt8], chunkSize: Int, pause: Duration = .zero) throws {
        var offset = 0
        while offset < body.count {
            let end = min(offset + max(chunkSize, 1), body.count)
            try send(
                Array(String(end - offset, radix: 16).utf8) + Array("\r\n".utf8) + Array(body[offset..<end])
                    + Array("\r\n".utf8))
            offset = end
            if pause > .zero { Thread.sleep(forTimeInterval: pause.timeInterval) }
        }
        try send("0\r\n\r\n")
    }

    /// Reads one response: status line, headers, and a body delimited by `Content-Length`,
    /// chunked coding, or the end of the connection.
    ///
    /// - Parameter expectingBody: False for answers to `HEAD`, whose `Content-Length` describes
    ///   a body that is not sent (RFC 9110 section 9.3.2).
    /// - Throws: ``TestHTTPError`` on timeout or when the connection closes before a response.
    public func readResponse(expectingBody: Bool = true) throws -> TestHTTPResponse {
        let headerEnd = try readUntil(Array("\r\n\r\n".utf8))
        let head = String(decoding: buffer[..<headerEnd], as: UTF8.self)
        buffer.removeFirst(headerEnd + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw TestHTTPError("bad status line in \(head)")
        }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let response = TestHTTPResponse(status: status, headers: headers, body: [])
        if !expectingBody || status == 204 || status == 304 || (100..<200).contains(status) { return response }
        if let length = response.header("Content-Length").flatMap(Int.init) {
            try fill(length)
            var result = response
            result.body = Array(buffer.prefix(length))
            buffer.removeFirst(length)
            return result
        }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            var result = response
            while true {
                let lineEnd = try readUntil(Array("\r\n".utf8))
                let size =
                    Int(String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16) ?? 0
                buffer.removeFirst(lineEnd + 2)
                try fill(size + 2)
                result.body += buffer.prefix(size)
                buffer.removeFirst(size + 2)
                if size == 0 { return result }
            }
        }
        var result = response
        result.body = buffer + readToEnd()
        buffer = []
        return result
    }

    /// Reads until the server closes the connection (or the read timeout passes).
    public func readToEnd() -> [UInt8] {
        var out: [UInt8] = []
        while let chunk = try? receiveSome(), !chunk.isEmpty { out += chunk }
        return out
    }

    private func readUntil(_ marker: [UInt8]) throws -> Int {
        while true {
            if let range = buffer.firstRange(of: marker) { return range.lowerBound }
            let chunk = try receiveSome()
            guard !chunk.isEmpty else { throw TestHTTPError("connection closed before a complete response") }
            buffer += chunk
        }
    }

    private func fill(_ count: Int) throws {
        while buffer.count < count {
            let chunk = try receiveSome()
            guard !chunk.isEmpty else { throw TestHTTPError("connection closed inside a response body") }
            buffer += chunk
        }
    }

    private func receiveSome() throws -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count >= 0 else { throw TestHTTPError("recv: \(String(cString: strerror(errno)))") }
        return Array(chunk.prefix(count))
    }

}
