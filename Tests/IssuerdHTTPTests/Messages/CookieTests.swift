import IssuerdHTTP
import Testing

@Suite("HTTPRequest.cookie reads the Cookie header (RFC 6265 section 5.4)")
struct CookieTests {
    private func request(_ cookies: String...) -> HTTPRequest {
        HTTPRequest(method: .get, path: "/", headers: HTTPHeaders(cookies.map { ("Cookie", $0) }))
    }

    @Test("A named cookie among several, spaces and quotes dropped")
    func named() {
        let request = request("theme=dark; issuerd_console=abc123 ;other=\"quoted\"")
        #expect(request.cookie("issuerd_console") == "abc123")
        #expect(request.cookie("other") == "quoted")
        #expect(request.cookie("theme") == "dark")
    }

    @Test("Names are case-sensitive, the first pair wins, later header fields are read too")
    func firstWins() {
        let request = request("a=1", "Issuerd=2; issuerd=3; issuerd=4")
        #expect(request.cookie("issuerd") == "3")
        #expect(request.cookie("Issuerd") == "2")
        #expect(request.cookie("a") == "1")
    }

    @Test("Absent, malformed or oversized headers give nil")
    func absent() {
        #expect(HTTPRequest(method: .get, path: "/").cookie("x") == nil)
        #expect(request("x").cookie("x") == nil)
        #expect(request("xy=1").cookie("x") == nil)
        #expect(request("x=" + String(repeating: "a", count: 9000)).cookie("x") == nil)
        #expect(request("x=").cookie("x") == "")
    }
}
