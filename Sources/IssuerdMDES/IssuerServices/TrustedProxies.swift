import Glibc

/// The peers allowed to vouch for a client certificate (`ISSUERD_TRUSTED_PROXIES`): IPv4 and
/// IPv6 addresses, each optionally with a prefix length (`10.0.0.0/8`, `fd00::/8`).
///
/// An IPv4 peer seen as an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, a dual-stack socket)
/// matches its IPv4 entry.
public struct TrustedProxies: Sendable, Equatable, CustomStringConvertible {
    struct Network: Sendable, Equatable {
        var bytes: [UInt8]
        var prefixLength: Int
    }

    private let networks: [Network]
    /// The entries as configured.
    public let description: String

    /// The default: the loopback addresses only.
    public static let loopback = try! TrustedProxies("127.0.0.1,::1")

    /// Parses a comma-separated list.
    ///
    /// - Throws: ``MDESKeyError`` naming the first entry that is not an address or network.
    public init(_ text: String) throws {
        var networks: [Network] = []
        for entry in text.split(separator: ",") {
            let trimmed = entry.trimmingSpaces
            guard !trimmed.isEmpty else { continue }
            let parts = trimmed.split(separator: "/", maxSplits: 1)
            guard let bytes = Self.address(String(parts[0])) else {
                throw MDESKeyError("\(trimmed) is not an IP address or network")
            }
            var prefix = bytes.count * 8
            if parts.count == 2 {
                guard let value = Int(parts[1]), (0...prefix).contains(value) else {
                    throw MDESKeyError("\(trimmed) has an invalid prefix length")
                }
                prefix = value
            }
            networks.append(Network(bytes: bytes, prefixLength: prefix))
        }
        guard !networks.isEmpty else { throw MDESKeyError("no trusted proxy address") }
        self.networks = networks
        self.description = networks.map { Self.text($0) }.joined(separator: ",")
    }

    /// Whether `peer` (as the server reports it) is one of the trusted proxies; false for nil.
    public func contains(_ peer: String?) -> Bool {
        guard let peer, var bytes = Self.address(peer) else { return false }
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            bytes = Array(bytes[12...])
        }
        return networks.contains { network in
            guard network.bytes.count == bytes.count else { return false }
            var remaining = network.prefixLength
            for index in 0..<bytes.count where remaining > 0 {
                let bits = min(8, remaining)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if bytes[index] & mask != network.bytes[index] & mask { return false }
                remaining -= bits
            }
            return true
        }
    }

    /// The 4 or 16 bytes of an IPv4 or IPv6 address text, nil when it is neither.
    static func address(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    private static func text(_ network: Network) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = network.bytes.count == 4 ? AF_INET : AF_INET6
        _ = network.bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        let address = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return network.prefixLength == network.bytes.count * 8 ? address : "\(address)/\(network.prefixLength)"
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(self.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
