import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP port bound to a socket that never listens, so every connection to it is
/// refused (ECONNREFUSED) until ``close()``, and no other test can take the port meanwhile.
final class RefusingPort: @unchecked Sendable {  // immutable after init; close() is called once by the owner
    let port: Int
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw StubError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw StubError("bind failed")
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { Glibc.close(descriptor) }
}
