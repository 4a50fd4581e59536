import Foundation

/// Loopback ports for test servers.
public enum LoopbackPort {
    /// A port on 127.0.0.1 nothing listens on now (the kernel's choice for port 0); another
    /// process may take it before the caller binds it.
    ///
    /// - Throws: ``TestEnvironmentError`` when no socket can be bound.
    public static func free() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TestEnvironmentError("socket() failed: errno \(errno)") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else { throw TestEnvironmentError("bind(127.0.0.1:0) failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
