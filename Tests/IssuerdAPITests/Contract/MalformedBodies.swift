import Foundation

/// Generated bad request bodies for the malformed-input contract test.
///
/// `strict` bodies are wrong for any operation that needs at least one field; `mutations` take a
/// plausible body holding every field name of the wire contract and break one field at a time,
/// so they reach deeper validation but may legitimately succeed on a route that ignores that field.
enum MalformedBodies {
    /// One bad request: body bytes, `Content-Type` (nil: none sent), and a label for failures.
    struct Case: Sendable {
        var label: String
        var body: [UInt8]
        var contentType: String?
    }

    /// Every request field name in `Sources/IssuerdWire`, plus the backtest's.
    static let fields = [
        "customerId", "phoneNumber", "email", "phoneChangedAt", "emailChangedAt", "addressChangedAt", "cardId",
        "accountNumber",
        "expiration", "cardholderName", "paymentNetwork", "status", "localizedDescription", "country", "reason",
        "certificates", "nonce",
        "nonceSignature", "encryptionScheme", "channel", "device", "serialNumber", "passTypeIdentifier",
        "tokenReference", "requestId",
        "tokenRequestorId", "tokenizationSource", "card", "wallet", "activeTokenCount", "activationMethodId", "code",
        "event", "at",
        "rules", "since", "until", "challengeId", "method", "extraText", "serverSessionId",
    ]

    /// A body with plausible values for every field.
    static var plausible: [String: Any] {
        [
            "customerId": "mal-customer", "phoneNumber": "010-1234-5678", "email": "a@example.com",
            "phoneChangedAt": "2025-01-01T00:00:00Z", "emailChangedAt": "2025-01-01T00:00:00Z",
            "addressChangedAt": "2025-01-01T00:00:00Z",
            "cardId": "mal-card", "accountNumber": "4111111111111111", "expiration": "12/35", "cardholderName": "KIM",
            "paymentNetwork": "visa", "status": "active", "localizedDescription": "Card", "country": "KR",
            "reason": "test",
            "certificates": ["MIIB", "MIIC"], "nonce": "AAECAw==", "nonceSignature": "AAECAw==",
            "encryptionScheme": "ECC_V2",
            "channel": "in_app",
            "device": [
                "id": "dev-1", "type": "phone", "model": "iPhone", "osVersion": "18.0", "locale": "ko_KR",
                "ipAddress": "10.0.0.1",
            ],
            "serialNumber": "serial", "passTypeIdentifier": "pass.example",
            "tokenReference": "DNITHE000000000000000001",
            "requestId": "req-1", "tokenRequestorId": "40010030273", "tokenizationSource": "manual",
            "card": ["accountNumber": "4111111111111111", "expiration": "12/35"],
            "wallet": [
                "deviceScore": 4, "accountScore": 5, "phoneNumberScore": 3, "recommendedDecision": "APPROVED",
                "reasonCodes": ["0A"],
            ],
            "activeTokenCount": 1, "activationMethodId": "sms-1", "code": "123456", "event": "created",
            "at": "2025-01-01T00:00:00Z",
            "rules": "rule x", "since": "2025-01-01T00:00:00Z", "until": "2025-01-02T00:00:00Z",
            "challengeId": UUID().uuidString, "method": "sms",
        ]
    }

    /// Bad values for one field at a time.
    static var badValues: [(String, Any)] {
        [
            ("number", 1), ("negative", -1), ("null", NSNull()), ("empty", ""),
            ("huge", String(repeating: "A", count: 20_000)),
            ("bad base64", "!!!not*base64!!!"), ("unknown enum", "zzz_unknown_value"), ("array", [1, 2]),
            ("object", ["x": 1]),
            ("bool", true), ("big number", 1e300), ("control", "a\u{0}b\u{1B}c"),
            ("negative huge", -9_223_372_036_854_775_807),
        ]
    }

    static func json(_ object: Any) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object)) ?? Data("{}".utf8))
    }

    static func everyField(_ value: Any) -> [UInt8] {
        json(Dictionary(uniqueKeysWithValues: fields.map { ($0, value) }))
    }

    /// Bodies that no operation needing a field may accept.
    static var strict: [Case] {
        let json = "application/json"
        var cases: [Case] = [
            Case(label: "empty body", body: [], contentType: json),
            Case(label: "not JSON", body: Array("hello there".utf8), contentType: json),
            Case(label: "truncated object", body: Array("{\"customerId\":".utf8), contentType: json),
            Case(label: "lone brace", body: Array("{".utf8), contentType: json),
            Case(label: "array", body: Array("[]".utf8), contentType: json),
            Case(label: "null", body: Array("null".utf8), contentType: json),
            Case(label: "number", body: Array("42".utf8), contentType: json),
            Case(label: "string", body: Array("\"text\"".utf8), contentType: json),
            Case(label: "empty object", body: Array("{}".utf8), contentType: json),
            Case(label: "missing value", body: Array("{\"a\":}".utf8), contentType: json),
            Case(label: "NaN", body: Array("{\"customerId\":NaN}".utf8), contentType: json),
            Case(
                label: "invalid UTF-8",
                body: Array("{\"customerId\":\"".utf8) + [0xFF, 0xFE, 0xC3, 0x28] + Array("\"}".utf8), contentType: json
            ),
            Case(
                label: "overlong UTF-8", body: Array("{\"cardId\":\"".utf8) + [0xC0, 0xAF] + Array("\"}".utf8),
                contentType: json),
            Case(label: "NUL bytes", body: [0, 0, 0, 0], contentType: json),
            Case(
                label: "deep arrays 10k",
                body: Array(String(repeating: "[", count: 10_000).utf8)
                    + Array(String(repeating: "]", count: 10_000).utf8), contentType: json),
            Case(
                label: "deep arrays 200k unclosed", body: Array(String(repeating: "[", count: 200_000).utf8),
                contentType: json),
            Case(
                label: "deep objects 10k",
                body: Array(String(repeating: "{\"a\":", count: 10_000).utf8) + Array("1".utf8)
                    + Array(String(repeating: "}", count: 10_000).utf8), contentType: json),
            Case(
                label: "over the body limit",
                body: Array(("{\"customerId\":\"" + String(repeating: "x", count: 1 << 20) + "\"}").utf8),
                contentType: json),
            Case(label: "text/plain", body: Array("{\"customerId\":\"c\"}".utf8), contentType: "text/plain"),
            Case(label: "xml", body: Array("<customerId>c</customerId>".utf8), contentType: "application/xml"),
            Case(label: "no content type", body: Array("{\"customerId\":\"c\"}".utf8), contentType: nil),
            Case(
                label: "latin-1 charset", body: Array("{\"customerId\":\"c\"}".utf8),
                contentType: "application/json; charset=iso-8859-1"),
            Case(
                label: "form encoded", body: Array("customerId=c&cardId=d".utf8),
                contentType: "application/x-www-form-urlencoded"),
        ]
        let values: [(String, Any)] = [
            ("every field a number", 1), ("every field negative", -1), ("every field null", NSNull()),
            ("every field empty", ""),
            ("every field huge", String(repeating: "Z", count: 5000)), ("every field bad base64", "!!!not*base64!!!"),
            ("every field an array", [Any]()), ("every field an object", [String: Any]()), ("every field true", true),
            ("every field 1e300", 1e300), ("every field control characters", "\u{0}\u{7}\u{1B}"),
        ]
        for (label, value) in values { cases.append(Case(label: label, body: everyField(value), contentType: json)) }
        return cases
    }

    /// Bodies Foundation's JSON parser accepts although RFC 8259 does not (a trailing comma):
    /// only "never 5xx" is asserted for them.
    static var lenientSyntax: [Case] {
        [Case(label: "trailing comma", body: Array("{\"customerId\":\"x\",}".utf8), contentType: "application/json")]
    }

    /// One field broken at a time in the plausible body (every field, a rotating few bad values each).
    static var mutations: [Case] {
        var cases: [Case] = []
        for (index, field) in fields.enumerated() {
            for offset in 0..<4 {
                let (label, value) = badValues[(index + offset * 3) % badValues.count]
                var body = plausible
                body[field] = value
                cases.append(Case(label: "\(field) \(label)", body: json(body), contentType: "application/json"))
            }
            var without = plausible
            without.removeValue(forKey: field)
            cases.append(Case(label: "\(field) missing", body: json(without), contentType: "application/json"))
        }
        return cases
    }
}
