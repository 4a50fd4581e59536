import IssuerdCore

extension JSONValue {
    /// The value as compact JSON text with object keys sorted, written directly.
    ///
    /// Foundation's `JSONEncoder` walks a `JSONValue` tree through its generic `Encoder`
    /// machinery, which profiling showed as a fifth of the CPU of a provisioning request (every
    /// decision stores its inputs, features and hits); a direct writer costs a string build.
    /// Non-finite doubles, which JSON cannot carry, are written as `null`.
    public var jsonText: String {
        var out = ""
        append(to: &out, sortedKeys: true)
        return out
    }

    /// The value as compact JSON text with object members in no particular order: for
    /// `jsonb` columns, which keep their own key order, so sorting would be wasted work.
    public var unorderedJSONText: String {
        var out = ""
        out.reserveCapacity(1024)
        append(to: &out, sortedKeys: false)
        return out
    }

    private func append(to out: inout String, sortedKeys: Bool) {
        switch self {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .int(let number): out += String(number)
        case .double(let number): out += number.isFinite ? "\(number)" : "null"
        case .string(let text): JSONText.appendString(text, to: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.append(to: &out, sortedKeys: sortedKeys)
            }
            out += "]"
        case .object(let members):
            out += "{"
            if sortedKeys {
                for (index, key) in members.keys.sorted().enumerated() {
                    if index > 0 { out += "," }
                    JSONText.appendString(key, to: &out)
                    out += ":"
                    members[key]!.append(to: &out, sortedKeys: true)
                }
            } else {
                var first = true
                for (key, value) in members {
                    if !first { out += "," }
                    first = false
                    JSONText.appendString(key, to: &out)
                    out += ":"
                    value.append(to: &out, sortedKeys: false)
                }
            }
            out += "}"
        }
    }
}
