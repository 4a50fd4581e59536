import Foundation
import IssuerdCore
import Testing

@testable import IssuerdHTTP

/// Headers, request ids, JSON values and the error envelope.
@Suite struct MessageTests {
    @Test func headersKeepOrderAndMatchNamesCaseInsensitively() {
        var headers: HTTPHeaders = ["Accept": "a", "X-Thing": "1"]
        headers.add("x-thing", "2")
        #expect(headers["ACCEPT"] == "a")
        #expect(headers.values(for: "X-THING") == ["1", "2"])
        headers.set("X-Thing", "3")
        #expect(headers.values(for: "x-thing") == ["3"])
        #expect(headers.fields.map(\.name) == ["Accept", "X-Thing"])
        headers.remove("accept")
        #expect(!headers.contains("Accept"))
        #expect(headers.count == 1)
    }

    @Test(arguments: [
        ("abc-123", true), ("A.b_c:d-e", true), (String(repeating: "a", count: 128), true),
        ("", false), (String(repeating: "a", count: 129), false), ("has space", false),
        ("new\nline", false), ("quote\"", false), ("ünï", false), ("a/b", false),
    ])
    func requestIdSanity(candidate: String, sane: Bool) {
        #expect(RequestIdentifier.isSane(candidate) == sane)
        let resolved = RequestIdentifier.resolve(candidate)
        #expect((resolved == candidate) == sane)
        #expect(RequestIdentifier.isSane(resolved))
    }

    @Test func generatedRequestIdsAreFresh() {
        let ids = Set((0..<100).map { _ in RequestIdentifier.generate() })
        #expect(ids.count == 100)
    }

    @Test func jsonValueRoundTrips() throws {
        let text = #"{"a":[1,2.5,"x",true,null],"b":{"c":-7}}"#
        let value = try JSONCoding.decoder.decode(JSONValue.self, from: Data(text.utf8))
        #expect(value["a"] == [1, 2.5, "x", true, nil])
        #expect(value["b"]?["c"] == .int(-7))
        let encoded = String(decoding: try JSONCoding.encoder.encode(value), as: UTF8.self)
        #expect(encoded == text)
    }

    @Test func envelopeCannotBeOverriddenByContext() throws {
        let error = HTTPError(
            status: 409, code: "state_conflict", message: "token not awaiting verification",
            context: ["code": "spoof", "message": "spoof", "tokenReference": "t/1"])
        let response = error.response(requestId: "rid")
        let text = String(decoding: response.body, as: UTF8.self)
        #expect(
            text
                == #"{"error":{"code":"state_conflict","message":"token not awaiting verification","tokenReference":"t/1"}}"#
        )
        #expect(response.status == 409)
        #expect(response.headers["X-Request-Id"] == "rid")
    }

    @Test func responseFactories() throws {
        #expect(HTTPResponse.noContent().status == 204)
        #expect(HTTPResponse.noContent().body.isEmpty)
        let text = HTTPResponse.text("# metrics", contentType: "text/plain; version=0.0.4")
        #expect(text.headers["content-type"] == "text/plain; version=0.0.4")
        let json = try HTTPResponse.json(["url": "https://x/y"], status: 201)
        #expect(json.status == 201)
        #expect(String(decoding: json.body, as: UTF8.self) == #"{"url":"https://x/y"}"#)
        #expect(throws: EncodingError.self) { try HTTPResponse.json(["n": Double.nan]) }
    }
}
