import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdHTTP

/// Request heads whose framing a proxy and the server could read differently (request
/// smuggling, RFC 9112 section 11.2), sent byte for byte over real sockets: each is 400 with
/// `Connection: close`, and what was sent behind it is never answered.
@Suite struct HTTPServerFramingTests {
    /// A request that must be refused, and a second request smuggled behind it.
    static let smuggled = "GET /inspect HTTP/1.1\r\nHost: x\r\n\r\n"

    static let ambiguousHeads: [(name: String, head: [UInt8])] = [
        (
            "two different Content-Lengths",
            Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\nhello".utf8)
        ),
        (
            "two equal Content-Lengths",
            Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello".utf8)
        ),
        (
            "Content-Length with Transfer-Encoding",
            Array(
                "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                    .utf8)
        ),
        (
            "Transfer-Encoding with Content-Length",
            Array(
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n"
                    .utf8)
        ),
        (
            "a coding other than chunked",
            Array("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n".utf8)
        ),
        (
            "chunked with a trailing blank",
            Array("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked \r\n\r\n0\r\n\r\n".utf8)
        ),
        (
            "chunked twice",
            Array(
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                    .utf8)
        ),
        (
            "Transfer-Encoding in HTTP/1.0",
            Array("POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8)
        ),
        ("two Hosts", Array("GET /inspect HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n".utf8)),
        (
            "a NUL inside a header value",
            Array("GET /inspect HTTP/1.1\r\nHost: x\r\nX-Probe: abc".utf8) + [0] + Array("def\r\n\r\n".utf8)
        ),
        (
            "a NUL hiding a Content-Length",
            Array("POST /echo HTTP/1.1\r\nHost: x\r\nX-Probe: a".utf8) + [0]
                + Array("\r\nContent-Length: 7\r\n\r\n".utf8)
        ),
        ("a NUL in the last header", Array("GET /inspect HTTP/1.1\r\nHost: x".utf8) + [0] + Array("y\r\n\r\n".utf8)),
        ("a control character in a value", Array("GET /inspect HTTP/1.1\r\nHost: x\r\nX-Probe: a\u{1}b\r\n\r\n".utf8)),
        ("DEL in a value", Array("GET /inspect HTTP/1.1\r\nHost: x\r\nX-Probe: a\u{7F}b\r\n\r\n".utf8)),
        ("a bare CR in a value", Array("GET /inspect HTTP/1.1\r\nHost: x\r\nX-Probe: a\rb\r\n\r\n".utf8)),
        ("a folded header line", Array("GET /inspect HTTP/1.1\r\nHost: x\r\nX-Probe: a\r\n b\r\n\r\n".utf8)),
        ("a space before the colon", Array("GET /inspect HTTP/1.1\r\nHost: x\r\nX-Probe : a\r\n\r\n".utf8)),
    ]

    @Test(arguments: ambiguousHeads.map(\.name))
    func anAmbiguousHeadIs400AndWhatFollowsItIsNeverAnswered(name: String) throws {
        let head = try #require(Self.ambiguousHeads.first { $0.name == name }?.head)
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port, timeout: 5)
        try connection.send(head + Array(Self.smuggled.utf8))
        let response = try connection.readResponse()
        #expect(response.status == 400, "\(name)")
        #expect(response.errorEnvelope()?["code"] as? String == "malformed_request", "\(name)")
        #expect(response.header("Connection")?.lowercased() == "close", "\(name)")
        // The connection ends after the 400: the smuggled request is not read, let alone answered.
        #expect(connection.readToEnd().isEmpty, "\(name)")
        #expect(try test.client.get("/inspect").status == 200)
    }

    @Test func http11WithoutHostIs400AndClosed() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port, timeout: 5)
        try connection.send("GET /inspect HTTP/1.1\r\nX-Probe: 1\r\n\r\n" + Self.smuggled)
        let response = try connection.readResponse()
        #expect(response.status == 400)
        #expect(response.header("Connection")?.lowercased() == "close")
        #expect(connection.readToEnd().isEmpty)
    }

    /// Heads refused once parsed, whose 400 must be one whole answer: libmicrohttpd 0.9.75's own
    /// 400 for these carried its head twice, the second inside the counted body.
    static let refusedHeads: [(name: String, head: String)] = [
        ("HTTP/1.1 without Host", "GET /inspect HTTP/1.1\r\nX-Probe: 1\r\n\r\n"),
        ("POST without Host", "POST /echo HTTP/1.1\r\nContent-Length: 2\r\n\r\nab"),
        ("a space in the request target", "GET /ins pect HTTP/1.1\r\nHost: x\r\n\r\n"),
    ]

    @Test(arguments: refusedHeads.map(\.name))
    func aRefusedHeadGetsExactlyOneWellFormed400(name: String) throws {
        let head = try #require(Self.refusedHeads.first { $0.name == name }?.head)
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port, timeout: 5)
        try connection.send(head + Self.smuggled)
        let bytes = connection.readToEnd()
        let text = String(decoding: bytes, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let headLines = try #require(parts.first).components(separatedBy: "\r\n")
        #expect(headLines.first == "HTTP/1.1 400 Bad Request", "\(name): \(text)")
        #expect(text.components(separatedBy: "HTTP/1.").count == 2, "\(name): more than one head: \(text)")
        let fields = Dictionary(
            headLines.dropFirst().map { line -> (String, String) in
                let colon = line.firstIndex(of: ":") ?? line.endIndex
                return (
                    line[..<colon].lowercased(),
                    line[colon...].dropFirst().trimmingCharacters(in: .whitespaces)
                )
            }, uniquingKeysWith: { first, _ in first })
        #expect(fields["connection"]?.lowercased() == "close", "\(name)")
        // Exactly the counted body follows the head, and nothing after it.
        let headBytes = try #require(parts.first).utf8.count + 4
        let body = Array(bytes.dropFirst(headBytes))
        #expect(fields["content-length"] == String(body.count), "\(name): \(text)")
        let envelope = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        #expect((envelope?["error"] as? [String: Any])?["code"] as? String == "malformed_request", "\(name): \(text)")
    }

    @Test func soundHeadsStillPassPipelinedAndChunked() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port, timeout: 5)
        // Two pipelined requests, a bare-LF line, an empty value, optional whitespace and
        // obs-text in a value, HTTP/1.0 without Host: all sound, all answered.
        try connection.send(
            "GET /inspect?a=1 HTTP/1.1\r\nHost: x\r\nX-Empty:\r\nX-Spaces: \t a b \t\r\nX-Bare: lf\n\r\n"
                + "POST /echo HTTP/1.1\r\nhost: x\r\nTRANSFER-encoding:  Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        #expect(try connection.readResponse().status == 200)
        let echoed = try connection.readResponse()
        #expect(echoed.status == 200)
        #expect(echoed.jsonObject()?["text"] as? String == "hello")
        try connection.send(
            Array("GET /inspect HTTP/1.1\r\nHost: x\r\nX-Latin: caf".utf8) + [0xE9] + Array("\r\n\r\n".utf8))
        #expect(try connection.readResponse().status == 200)

        let old = try RawHTTPConnection(port: test.port, timeout: 5)
        try old.send("GET /inspect HTTP/1.0\r\n\r\n")
        #expect(try old.readResponse().status == 200)
    }

    @Test func aLargeHeadWithManyFieldsIsAccepted() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port, timeout: 5)
        var head = "GET /inspect HTTP/1.1\r\nHost: x\r\n"
        for index in 0..<60 { head += "X-Field-\(index): " + String(repeating: "v", count: 200) + "\r\n" }
        // Sent in pieces, so libmicrohttpd grows its read buffer while it parses.
        try connection.sendSlowly(Array((head + "\r\n").utf8), pieceSize: 700, pause: .milliseconds(5))
        #expect(try connection.readResponse().status == 200)
    }
}
