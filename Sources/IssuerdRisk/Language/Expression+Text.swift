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
        case .chain(let first, let links): Self.text(of: first, links)
        case .membership(let value, let set, let negated): value.grouped + (negated ? " not in " : " in ") + set.text
        }
    }

    private var grouped: String {
        switch kind {
        case .binary, .chain, .membership: "(" + text + ")"
        default: text
        }
    }

    /// A chain written as the nested binary operations it stands for, `((a or b) or c) or d`,
    /// in one loop: the canonical text (``Rule/conditionText``) is the same as when the parser
    /// built a tree.
    private static func text(of first: Expression, _ links: [ChainLink]) -> String {
        var text = String(repeating: "(", count: links.count - 1) + first.grouped
        for (index, link) in links.enumerated() {
            if index > 0 { text += ")" }
            text += " " + link.op.rawValue + " " + link.operand.grouped
        }
        return text
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
