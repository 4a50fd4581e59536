import Foundation

/// The TCP side of a session: connecting with a timeout, writing whole PDUs, and cutting the
/// byte stream into PDUs by their `command_length`.
enum SMPPSocket {
    /// One PDU as received: its header's fields and all its bytes (header included, as
    /// libsmpp34's unpack wants them).
    struct PDU {
        var command: UInt32
        var status: UInt32
        var sequence: UInt32
        var bytes: [UInt8]
    }

    /// A connected TCP socket to `host:port` (the first address that answers within `timeout`),
    /// blocking, with TCP_NODELAY and a send timeout; nil when none answers.
    static func connect(host: String, port: Int, timeout: Duration) -> Int32? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            entry = current.pointee.ai_next
            let descriptor = socket(current.pointee.ai_family, current.pointee.ai_socktype, current.pointee.ai_protocol)
            guard descriptor >= 0 else { continue }
            let flags = fcntl(descriptor, F_GETFL)
            _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
            var connected = Glibc.connect(descriptor, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0
            if !connected && errno == EINPROGRESS {
                var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                if poll(&poller, 1, Int32(timeout.timeInterval * 1000)) == 1 {
                    var error: Int32 = 0
                    var size = socklen_t(MemoryLayout<Int32>.size)
                    connected = getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &size) == 0 && error == 0
                }
            }
            guard connected else {
                close(descriptor)
                continue
            }
            _ = fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK)
            var one: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            var sendTimeout = timeval(tv_sec: Int(timeout.timeInterval), tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
            var closeOnExec = fcntl(descriptor, F_GETFD)
            closeOnExec |= FD_CLOEXEC
            _ = fcntl(descriptor, F_SETFD, closeOnExec)
            return descriptor
        }
        return nil
    }

    /// Writes all of `bytes`; false when the socket is broken or the send timed out.
    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// PDUs read off a socket.
    struct Reader {
        let descriptor: Int32
        var buffer: [UInt8] = []

        init(descriptor: Int32) { self.descriptor = descriptor }

        /// The PDUs that arrive within `timeout` seconds (none when nothing does); nil when the
        /// peer closed, the socket broke or a PDU's length is impossible.
        mutating func poll(timeout: Double) -> [PDU]? {
            var complete: [PDU] = []
            guard take(into: &complete) else { return nil }
            if !complete.isEmpty { return complete }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&poller, 1, Int32(timeout * 1000))
            if ready == 0 || (ready < 0 && errno == EINTR) { return [] }
            guard ready > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
            guard take(into: &complete) else { return nil }
            return complete
        }

        /// The next PDU within `timeout` seconds; nil when none comes.
        mutating func next(timeout: Double) -> PDU? {
            let deadline = Date().addingTimeInterval(timeout)
            var waiting: [PDU] = []
            while waiting.isEmpty && Date() < deadline {
                guard let got = poll(timeout: min(0.2, max(0.01, deadline.timeIntervalSinceNow))) else { return nil }
                waiting = got
            }
            guard let first = waiting.first else { return nil }
            // Anything after the first stays for the next read (re-framed from its bytes).
            buffer = waiting.dropFirst().flatMap(\.bytes) + buffer
            return first
        }

        /// Moves every complete PDU from the buffer; false on an impossible length.
        private mutating func take(into complete: inout [PDU]) -> Bool {
            while buffer.count >= 16 {
                let length = Int(Self.word(buffer, 0))
                guard (16...70_000).contains(length) else { return false }
                guard buffer.count >= length else { break }
                let bytes = Array(buffer[..<length])
                buffer.removeFirst(length)
                complete.append(
                    PDU(
                        command: Self.word(bytes, 4), status: Self.word(bytes, 8), sequence: Self.word(bytes, 12),
                        bytes: bytes))
            }
            return true
        }

        private static func word(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
            bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
    }
}
