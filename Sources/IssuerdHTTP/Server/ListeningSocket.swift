import Glibc

/// A bound, listening TCP socket that the server hands to libmicrohttpd.
///
/// Binding here rather than inside libmicrohttpd gives the real port for `:0` and a clear
/// error naming the failed call; libmicrohttpd does not close a socket it was given, so this
/// object does, after the daemon has stopped.
final class ListeningSocket: @unchecked Sendable {
    // @unchecked Sendable: `descriptor` and `port` are immutable after init; close happens once, in deinit.
    let descriptor: Int32
    let port: Int

    /// Creates, binds and listens.
    ///
    /// - Throws: ``HTTPServerError`` `socket_failed` naming the call and errno.
    init(address: ListenAddress, backlog: Int32 = 1024) throws {
        let domain = address.family == .ipv6 ? AF_INET6 : AF_INET
        // Non-blocking because several libmicrohttpd workers race to accept on it.
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = socket(domain, type, 0)
        guard fd >= 0 else { throw Self.failure("socket", address) }
        do {
            var one: Int32 = 1
            // Restarts must not wait out TIME_WAIT of the previous process's connections.
            guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                throw Self.failure("setsockopt(SO_REUSEADDR)", address)
            }
            try Self.bind(fd, address)
            guard listen(fd, backlog) == 0 else { throw Self.failure("listen", address) }
            self.port = try Self.boundPort(fd, address)
        } catch {
            close(fd)
            throw error
        }
        self.descriptor = fd
    }

    /// Stops the kernel from completing new connections while the descriptor stays valid.
    ///
    /// On Linux `shutdown(2)` on a listening socket leaves the LISTEN state, so new connects
    /// are refused at once, while libmicrohttpd's threads may still hold the descriptor in
    /// their poll sets after `MHD_quiesce_daemon` (closing it then could let the number be
    /// reused under them).
    func stopListening() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
    }

    deinit {
        close(descriptor)
    }

    private static func bind(_ fd: Int32, _ address: ListenAddress) throws {
        let result: Int32
        switch address.family {
        case .ipv4:
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = address.port.bigEndian
            guard inet_pton(AF_INET, address.host, &sin.sin_addr) == 1 else {
                throw HTTPServerError(.invalidListenAddress, "invalid IPv4 address \(address.host)")
            }
            result = withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .ipv6:
            var only: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &only, socklen_t(MemoryLayout<Int32>.size))
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = address.port.bigEndian
            guard inet_pton(AF_INET6, address.host, &sin6.sin6_addr) == 1 else {
                throw HTTPServerError(.invalidListenAddress, "invalid IPv6 address \(address.host)")
            }
            result = withUnsafePointer(to: &sin6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
        guard result == 0 else { throw failure("bind", address) }
    }

    private static func boundPort(_ fd: Int32, _ address: ListenAddress) throws -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { throw failure("getsockname", address) }
        return withUnsafePointer(to: &storage) { pointer in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET6:
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin6_port))
                }
            default:
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin_port))
                }
            }
        }
    }

    private static func failure(_ call: String, _ address: ListenAddress) -> HTTPServerError {
        let reason = String(cString: strerror(errno))
        return HTTPServerError(.socketFailed, "\(call) for \(address) failed: \(reason)")
    }
}
