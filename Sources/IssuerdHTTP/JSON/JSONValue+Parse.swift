import IssuerdCore

extension JSONValue: JSONTree {
    public static var jsonNull: JSONValue { .null }
    public static func jsonBool(_ flag: Bool) -> JSONValue { .bool(flag) }
    /// An integer text that fits an `Int` is ``int(_:)``; any other number ``double(_:)``.
    public static func jsonNumber(integer: Int64?, double: Double) -> JSONValue {
        if let integer, let value = Int(exactly: integer) { return .int(value) }
        return .double(double)
    }
    public static func jsonString(_ text: String) -> JSONValue { .string(text) }
    public static func jsonArray(_ items: [JSONValue]) -> JSONValue { .array(items) }
    public static func jsonObject(_ members: [String: JSONValue]) -> JSONValue { .object(members) }

    /// The JSON text `bytes` parsed in one pass (``JSONTreeParser``), or nil when it is not
    /// JSON or the parser declines it (nesting deeper than 64, a lone surrogate): callers that
    /// must say why fall back to Foundation's decoder.
    package static func parse(bytes: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        JSONTreeParser<JSONValue>.parse(bytes)
    }
}

extension HTTPRequest {
    /// ``decodeJSON(_:)`` with a fast path: the body parsed in one pass and mapped by `fast`;
    /// when either declines (a missing field, a wrong type, anything unusual), `JSONDecoder`
    /// decodes it, so what is accepted and every error stay those of `T`'s `Decodable`
    /// conformance. `fast` must accept nothing that conformance would refuse.
    public func decodeJSON<T: Decodable>(_ type: T.Type = T.self, fast: (JSONValue) -> T?) throws -> T {
        if Self.isJSONMediaType(headers["Content-Type"]),
            let tree = body.withUnsafeBufferPointer({ JSONValue.parse(bytes: $0) }), let value = fast(tree)
        {
            return value
        }
        return try decodeJSON(type)
    }
}
