import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdHTTP

/// Request bodies over real sockets: limits, chunked and slow uploads, JSON decoding.
@Suite struct HTTPServerBodyTests {
    @Test func declaredContentLengthOverTheLimitIs413BeforeTheBodyIsSent() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port)
        try connection.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(TestServer.bodyLimit + 1)\r\nExpect: 100-continue\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(response.errorEnvelope()?["code"] as? String == "payload_too_large")
        #expect(response.header("X-Request-Id") != nil)

        let viaClient = try test.client.send(
            "POST", "/echo", body: Array(repeating: 0x61, count: TestServer.bodyLimit + 1))
        #expect(viaClient.status == 413)
    }

    @Test func declaredContentLengthOverTheLimitSentWholeStillGetsIts413() throws {
        // Without `Expect: 100-continue` the client writes its whole body at once; the server
        // must read (and drop) it rather than close under the client, or the 413 can be lost.
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port)
        let body = [UInt8](repeating: 0x61, count: TestServer.bodyLimit + 4096)
        try connection.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.count)\r\n\r\n")
        // Pieces with pauses, as a client on a real network writes: a server that answered at the
        // headers and closed would make these writes fail before the answer is read.
        try connection.sendSlowly(body, pieceSize: max(body.count / 16, 1), pause: .milliseconds(20))
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(response.errorEnvelope()?["code"] as? String == "payload_too_large")
        #expect(try test.client.get("/v1/cards/after").status == 200)
    }

    @Test func chunkedBodyOverTheLimitIs413() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        try connection.sendChunked(Array(repeating: 0x62, count: TestServer.bodyLimit + 10), chunkSize: 1000)
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(response.errorEnvelope()?["code"] as? String == "payload_too_large")
        #expect(try test.client.get("/v1/cards/after").status == 200)
    }

    @Test func aBodyFarPastTheLimitIsCutOffAndTheServerKeepsServing() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let connection = try RawHTTPConnection(port: test.port)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        let huge = Array(
            repeating: UInt8(0x63), count: TestServer.bodyLimit + ServerContext.discardAllowance + 64 * 1024)
        // The server closes the connection part-way, so the send may fail; either way no response.
        _ = try? connection.sendChunked(huge, chunkSize: 16 * 1024)
        #expect((try? connection.readResponse()) == nil)
        #expect(try test.client.get("/v1/cards/after").status == 200)
    }

    @Test func chunkedBodyInPiecesWithPausesArrivesWhole() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let body = Array((0..<TestServer.bodyLimit).map { UInt8(ascii: "a") + UInt8($0 % 26) })
        let connection = try RawHTTPConnection(port: test.port)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        try connection.sendChunked(body, chunkSize: 700, pause: .milliseconds(20))
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.jsonObject()?["bytes"] as? Int == body.count)
        #expect(response.jsonObject()?["text"] as? String == String(decoding: body, as: UTF8.self))
    }

    @Test func slowUploadTrickledOverASecondIsAnsweredCorrectly() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let body = Array(#"{"nonce":"slow-nonce","device":{"id":"dev-1"}}"#.utf8)
        let connection = try RawHTTPConnection(port: test.port)
        try connection.send(
            "POST /v1/cards/c-slow/apple-pay/provision HTTP/1.1\r\nHost: x\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n")
        try connection.sendSlowly(body, pieceSize: 2, pause: .milliseconds(40))
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.jsonObject()?["nonce"] as? String == "slow-nonce")
        #expect(response.jsonObject()?["deviceId"] as? String == "dev-1")
        #expect(response.jsonObject()?["cardId"] as? String == "c-slow")
    }

    @Test func unsupportedMediaTypeAndMalformedJSONOverTheWire() throws {
        let test = try TestServer()
        defer { test.server.shutdown() }
        let path = "/v1/cards/c1/apple-pay/provision"

        let text = try test.client.send("POST", path, headers: ["Content-Type": "text/plain"], body: Array("{}".utf8))
        #expect(text.status == 415)
        #expect(text.errorEnvelope()?["code"] as? String == "unsupported_media_type")

        let broken = try test.client.postJSON(path, #"{"nonce": "n", "device": "#)
        #expect(broken.status == 400)
        #expect(broken.errorEnvelope()?["code"] as? String == "malformed_json")

        let missing = try test.client.postJSON(path, #"{"nonce": "n", "device": {}}"#)
        #expect(missing.status == 400)
        #expect(missing.errorEnvelope()?["field"] as? String == "device.id")

        let good = try test.client.postJSON(
            path, #"{"nonce": "n", "device": {"id": "d"}}"#,
            headers: ["Content-Type": "application/json; charset=utf-8"])
        #expect(good.status == 200)
    }
}
