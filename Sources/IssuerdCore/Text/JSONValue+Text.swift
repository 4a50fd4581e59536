extension JSONValue {
    /// The value as compact JSON text with object keys sorted, written directly.
    ///
    /// Foundation's `JSONEncoder` walks a `JSONValue` tree through its generic `Encoder`
    /// machinery, which profiling showed as a fifth of the CPU of a provisioning request (every
    /// decision stores its inputs, features and hits); a direct writer costs a string build.
    /// Non-finite doubles, which JSON cannot carry, are written as `null`.
    public var jsonText: String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        appendJSON(to: &out, sortedKeys: true)
        return String(decoding: out, as: UTF8.self)
    }

    /// The value as compact JSON text with object members in no particular order: for
    /// `jsonb` columns, which keep their own key order, so sorting would be wasted work.
    public var unorderedJSONText: String {
        var out: [UInt8] = []
        out.reserveCapacity(2048)
        appendJSON(to: &out, sortedKeys: false)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the value as compact JSON to a byte buffer (appending bytes costs a fraction of
    /// appending many small strings).
    public func appendJSON(to out: inout [UInt8], sortedKeys: Bool) {
        switch self {
        case .null: out.append(contentsOf: Self.nullText)
        case .bool(let flag): out.append(contentsOf: flag ? Self.trueText : Self.falseText)
        case .int(let number): JSONText.appendInteger(number, to: &out)
        case .double(let number):
            if number.isFinite {
                out.append(contentsOf: "\(number)".utf8)
            } else {
                out.append(contentsOf: Self.nullText)
            }
        case .string(let text): JSONText.appendString(text, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.appendJSON(to: &out, sortedKeys: sortedKeys)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            if sortedKeys {
                for (index, key) in members.keys.sorted().enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    JSONText.appendString(key, to: &out)
                    out.append(UInt8(ascii: ":"))
                    members[key]!.appendJSON(to: &out, sortedKeys: true)
                }
            } else {
                var first = true
                for (key, value) in members {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    JSONText.appendString(key, to: &out)
                    out.append(UInt8(ascii: ":"))
                    value.appendJSON(to: &out, sortedKeys: false)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let nullText = Array("null".utf8)
    private static let trueText = Array("true".utf8)
    private static let falseText = Array("false".utf8)
}
