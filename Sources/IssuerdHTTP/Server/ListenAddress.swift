import Glibc

/// An IP address and TCP port to listen on, written `127.0.0.1:8080` or `[::1]:8080`.
///
/// Host names other than `localhost` are refused on purpose: a listen address that needs DNS
/// at start-up can silently bind somewhere unexpected.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address family.
    public enum Family: Sendable, Hashable {
        case ipv4
        case ipv6
    }

    /// The numeric address, without brackets.
    public var host: String
    /// The TCP port; 0 asks the kernel for a free one (tests).
    public var port: UInt16
    /// Whether ``host`` is IPv4 or IPv6.
    public var family: Family

    /// The service default, loopback only.
    public static let `default` = ListenAddress(host: "127.0.0.1", port: 8080, family: .ipv4)

    /// Creates an address from parts already validated by the caller.
    public init(host: String, port: UInt16, family: Family) {
        self.host = host
        self.port = port
        self.family = family
    }

    /// Parses `a.b.c.d:port`, `[v6]:port` or `localhost:port`.
    ///
    /// - Parameter text: The address as configured, e.g. the value of `ISSUERD_LISTEN`.
    /// - Returns: The address.
    /// - Throws: ``HTTPServerError`` `invalid_listen_address` with a message saying what is wrong.
    public static func parse(_ text: String) throws -> ListenAddress {
        func failure(_ why: String) -> HTTPServerError {
            let shown = text.count > 80 ? String(text.prefix(80)) + "…" : text
            return HTTPServerError(
                .invalidListenAddress,
                "listen address '\(shown)' \(why); expected 127.0.0.1:8080 or [::1]:8080")
        }
        guard text.utf8.count <= 100 else { throw failure("is too long") }
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw failure("has no closing ']'") }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw failure("has no ':port' after ']'") }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw failure("has no ':port'") }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            guard !hostPart.contains(":") else { throw failure("is IPv6 without brackets") }
        }
        guard !portPart.isEmpty, portPart.utf8.count <= 5, portPart.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = UInt16(portPart)
        else { throw failure("has a port that is not a number from 0 to 65535") }

        let host = String(hostPart)
        if text.hasPrefix("[") {
            guard Self.isNumeric(host, family: AF_INET6) else { throw failure("has an invalid IPv6 address") }
            return ListenAddress(host: host, port: port, family: .ipv6)
        }
        if host == "localhost" { return ListenAddress(host: "127.0.0.1", port: port, family: .ipv4) }
        guard Self.isNumeric(host, family: AF_INET) else { throw failure("has an invalid IPv4 address") }
        return ListenAddress(host: host, port: port, family: .ipv4)
    }

    /// `host:port`, with brackets around IPv6 hosts.
    public var description: String {
        family == .ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    private static func isNumeric(_ host: String, family: Int32) -> Bool {
        var storage = in6_addr()
        return withUnsafeMutableBytes(of: &storage) { inet_pton(family, host, $0.baseAddress) == 1 }
    }
}
