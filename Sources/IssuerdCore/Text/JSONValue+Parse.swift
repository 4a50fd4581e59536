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
