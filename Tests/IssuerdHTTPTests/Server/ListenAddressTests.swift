import Testing

@testable import IssuerdHTTP

/// Parsing `ISSUERD_LISTEN`-style addresses.
@Suite struct ListenAddressTests {
    @Test(
        arguments: [
            ("127.0.0.1:8080", "127.0.0.1", 8080, ListenAddress.Family.ipv4),
            ("0.0.0.0:0", "0.0.0.0", 0, .ipv4),
            ("[::1]:65535", "::1", 65535, .ipv6),
            ("[::]:443", "::", 443, .ipv6),
            ("localhost:9000", "127.0.0.1", 9000, .ipv4),
        ] as [(String, String, Int, ListenAddress.Family)])
    func validAddresses(text: String, host: String, port: Int, family: ListenAddress.Family) throws {
        let address = try ListenAddress.parse(text)
        #expect(address.host == host)
        #expect(Int(address.port) == port)
        #expect(address.family == family)
        #expect(try ListenAddress.parse(address.description) == address)
    }

    @Test(arguments: [
        "", "8080", ":8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:80a",
        "256.0.0.1:80", "::1:8080", "[::1]", "[::1]8080", "[nope]:80", "example.com:80", "127.0.0.1:+80",
        String(repeating: "9", count: 500),
    ])
    func invalidAddressesThrowAClearError(text: String) {
        #expect {
            try ListenAddress.parse(text)
        } throws: { error in
            guard let error = error as? HTTPServerError else { return false }
            return error.code == .invalidListenAddress && error.message.contains("expected 127.0.0.1:8080")
        }
    }
}
