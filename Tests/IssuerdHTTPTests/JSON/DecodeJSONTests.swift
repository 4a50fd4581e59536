import Foundation
import IssuerdCore
import Testing

@testable import IssuerdHTTP

/// `decodeJSON`: media type, syntax and shape errors, without echoing input.
@Suite struct DecodeJSONTests {
    private func request(_ body: String, contentType: String? = "application/json") -> HTTPRequest {
        var headers = HTTPHeaders()
        if let contentType { headers.add("Content-Type", contentType) }
        return HTTPRequest(method: .post, path: "/x", headers: headers, body: Array(body.utf8))
    }

    private func failure(_ request: HTTPRequest) -> HTTPError? {
        do {
            _ = try request.decodeJSON(ProvisionProbe.self)
            return nil
        } catch {
            return error as? HTTPError
        }
    }

    @Test(arguments: [
        "application/json", "application/json; charset=utf-8", "Application/JSON;charset=\"UTF-8\"",
        " application/json ",
    ])
    func acceptedMediaTypes(contentType: String) throws {
        let probe = try request(#"{"nonce":"n","device":{"id":"d"}}"#, contentType: contentType).decodeJSON(
            ProvisionProbe.self)
        #expect(probe.nonce == "n")
        #expect(probe.device.id == "d")
    }

    @Test(
        arguments: [
            nil, "text/plain", "application/json; charset=latin1", "application/jsonx",
            "application/x-www-form-urlencoded",
            "application/json; boundary=x",
        ] as [String?])
    func rejectedMediaTypesAre415(contentType: String?) {
        let error = failure(request(#"{"nonce":"n","device":{"id":"d"}}"#, contentType: contentType))
        #expect(error?.status == 415)
        #expect(error?.code == .unsupportedMediaType)
    }

    @Test(
        arguments: [
            ("", nil, "empty"),
            ("{\"nonce\": SECRET-4111111111111111", nil, "not valid JSON"),
            ("[1,2]", nil, "wrong JSON type"),
            (#"{"nonce":"SECRET","device":{}}"#, "device.id", "missing required field 'device.id'"),
            (#"{"nonce":4111111111111111,"device":{"id":"d"}}"#, "nonce", "field 'nonce' has the wrong type"),
            (#"{"nonce":null,"device":{"id":"d"}}"#, "nonce", "must not be null"),
            (
                #"{"nonce":"n","certificates":["a",7],"device":{"id":"d"}}"#, "certificates[1]",
                "field 'certificates[1]'"
            ),
        ] as [(String, String?, String)])
    func malformedBodiesAre400NamingTheField(body: String, field: String?, messagePart: String) {
        let error = failure(request(body))
        #expect(error?.status == 400)
        #expect(error?.code == .malformedJSON)
        #expect(error?.message.contains(messagePart) == true, "message was \(error?.message ?? "nil")")
        #expect(error?.context["field"] == field.map(JSONValue.string))
        let rendered = String(decoding: error?.response().body ?? [], as: UTF8.self)
        #expect(!rendered.contains("SECRET"))
        #expect(!rendered.contains("4111111111111111"))
    }
}
