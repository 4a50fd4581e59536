extension Expression {
    /// The expression written back in canonical form, fully parenthesised where precedence
    /// would otherwise be ambiguous to a reader.
    var text: String {
        switch kind {
        case .name(let name): name
        case .number(let value): RiskValue.format(value)
        case .duration(let seconds): RiskValue.formatDuration(seconds)
        case .string(let text): "\"" + text.replacingAll("\\", "\\\\").replacingAll("\"", "\\\"") + "\""
        case .bool(let flag): flag ? "true" : "false"
        case .list(let items): "[" + items.map(\.text).joined(separator: ", ") + "]"
        case .listReference(let name): "@" + name
        case .call(let name, let arguments): name + "(" + arguments.map(\.text).joined(separator: ", ") + ")"
        case .not(let inner): "not " + inner.grouped
        case .negate(let inner): "-" + inner.grouped
        case .binary(let op, let left, let right): left.grouped + " " + op.rawValue + " " + right.grouped
        case .membership(let value, let set, let negated): value.grouped + (negated ? " not in " : " in ") + set.text
        }
    }

    private var grouped: String {
        switch kind {
        case .binary, .membership: "(" + text + ")"
        default: text
        }
    }
}

extension String {
    func replacingAll(_ target: Character, _ replacement: String) -> String {
        var result = ""
        for character in self {
            if character == target { result += replacement } else { result.append(character) }
        }
        return result
    }
}
