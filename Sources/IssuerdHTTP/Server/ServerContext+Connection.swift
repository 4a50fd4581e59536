import CMicroHTTPD
import Glibc

/// What ``ServerContext`` reads from libmicrohttpd about a connection and its request.
extension ServerContext {
    /// The deadline id libmicrohttpd keeps in the connection's socket context (0: none).
    static func connectionID(_ connection: OpaquePointer) -> Int {
        issuerd_mhd_socket_context(connection).map { Int(bitPattern: $0) } ?? 0
    }

    /// Query parameters; the first of repeated names wins.
    static func query(_ connection: OpaquePointer) -> [String: String] {
        var query: [String: String] = [:]
        for (name, value) in pairs(connection, .GET_ARGUMENT_KIND) where query[name] == nil {
            query[name] = value
        }
        return query
    }

    static func header(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
    }

    static func pairs(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [(String, String)] {
        var pairs: [(String, String)] = []
        _ = withUnsafeMutablePointer(to: &pairs) {
            MHD_get_connection_values(connection, kind, collectPairsCallback, $0)
        }
        return pairs
    }

    static func remoteAddress(_ connection: OpaquePointer) -> String? {
        guard let address = issuerd_mhd_client_address(connection) else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let ok: Bool = text.withUnsafeMutableBufferPointer { buffer in
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    withUnsafePointer(to: sin.pointee.sin_addr) {
                        inet_ntop(AF_INET, $0, buffer.baseAddress, socklen_t(buffer.count)) != nil
                    }
                }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    withUnsafePointer(to: sin6.pointee.sin6_addr) {
                        inet_ntop(AF_INET6, $0, buffer.baseAddress, socklen_t(buffer.count)) != nil
                    }
                }
            default:
                false
            }
        }
        guard ok else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
