extension ExpressionCompiler {
    /// `and` / `or` with Kleene's three-valued logic: `false and unknown` is false,
    /// `true or unknown` is true, anything else involving unknown is unknown.
    func logical(_ op: BinaryOperator, _ lhs: CompiledExpression, _ rhs: CompiledExpression, at location: SourceLocation) throws(RuleDiagnostic) -> CompiledExpression {
        for side in [lhs, rhs] {
            guard case .bool = side.node else {
                throw RuleDiagnostic(side.location, "'\(op.rawValue)' joins conditions, but this is \(Self.describe(side))",
                                     expected: "a comparison or another true/false value")
            }
        }
        guard case .bool(let left) = lhs.node, case .bool(let right) = rhs.node else { preconditionFailure("checked above") }
        let node: Reader<Bool>
        if op == .and {
            node = { input, velocity in
                let a = left(input, velocity)
                if a == false { return false }
                let b = right(input, velocity)
                if b == false { return false }
                if a == nil || b == nil { return nil }
                return true
            }
        } else {
            node = { input, velocity in
                let a = left(input, velocity)
                if a == true { return true }
                let b = right(input, velocity)
                if b == true { return true }
                if a == nil || b == nil { return nil }
                return false
            }
        }
        return CompiledExpression(type: .bool, node: .bool(node), location: location)
    }

    /// `+ - * /` on numbers and durations; dividing by zero is unknown, never a trap.
    func arithmetic(_ op: BinaryOperator, _ lhs: CompiledExpression, _ rhs: CompiledExpression, at location: SourceLocation) throws(RuleDiagnostic) -> CompiledExpression {
        guard case .number(let left) = lhs.node, case .number(let right) = rhs.node, let a = lhs.type, let b = rhs.type else {
            let bad = if case .number = lhs.node { rhs } else { lhs }
            throw RuleDiagnostic(bad.location, "'\(op.rawValue)' needs numbers or durations, but this is \(Self.describe(bad))")
        }
        let result: RiskType
        switch (op, a, b) {
        case (.plus, .number, .number), (.minus, .number, .number), (.times, .number, .number), (.divide, .number, .number),
             (.divide, .duration, .duration):
            result = .number
        case (.plus, .duration, .duration), (.minus, .duration, .duration), (.times, .duration, .number), (.times, .number, .duration),
             (.divide, .duration, .number):
            result = .duration
        default:
            throw RuleDiagnostic(location, "cannot apply '\(op.rawValue)' to a \(a) and a \(b)",
                                 expected: a == .duration || b == .duration ? "durations on both sides of + and -, or a duration times a number" : "numbers")
        }
        let node: Reader<Double> = switch op {
        case .plus: { i, v in guard let x = left(i, v), let y = right(i, v) else { return nil }; return x + y }
        case .minus: { i, v in guard let x = left(i, v), let y = right(i, v) else { return nil }; return x - y }
        case .times: { i, v in guard let x = left(i, v), let y = right(i, v) else { return nil }; return x * y }
        default: { i, v in guard let x = left(i, v), let y = right(i, v), y != 0 else { return nil }; return x / y }
        }
        return CompiledExpression(type: result, node: .number(node), location: location)
    }

    /// `value in set` and `value not in set`, with the set resolved at compile time.
    func membership(_ value: CompiledExpression, _ set: CompiledExpression, negated: Bool, at location: SourceLocation) throws(RuleDiagnostic) -> CompiledExpression {
        guard case .set(let operand) = set.node else {
            throw RuleDiagnostic(set.location, "'in' needs a list", expected: "[\"a\", \"b\"] or @list_name")
        }
        let where_ = operand.listName.map { "the list @\($0)" } ?? "this list"
        guard let elementType = operand.elementType else {
            throw RuleDiagnostic(set.location, "the list is empty", expected: "at least one item")
        }
        let contains: Reader<Bool>
        switch (value.node, value.type) {
        case (.enumeration(let read), .enumeration(let domain)?):
            guard elementType == .string else {
                throw RuleDiagnostic(set.location, "\(where_) holds \(elementType)s but \(domain.name) is a string", expected: "a list of strings")
            }
            var mask: UInt64 = 0
            for name in operand.strings.sorted() {
                guard let code = domain.names.firstIndex(of: name) else {
                    throw RuleDiagnostic(operand.itemLocations[name] ?? set.location, "\"\(name)\" in \(where_) is not a \(domain.name)",
                                         expected: "one of \(domain.names.map { "\"\($0)\"" }.joined(separator: ", "))",
                                         suggestion: Suggestion.nearest(to: name, in: domain.names))
                }
                mask |= 1 << UInt64(code)
            }
            let bits = mask
            contains = { i, v in read(i, v).map { bits & (1 << UInt64($0)) != 0 } }
        case (.string(let read), .string?):
            guard elementType == .string else {
                throw RuleDiagnostic(set.location, "\(where_) holds \(elementType)s but the value is a string", expected: "a list of strings")
            }
            let strings = StringSet(operand.strings)
            contains = { i, v in read(i, v).map { strings.contains($0) } }
        case (.number(let read), let type?) where type == .number || type == .duration:
            guard elementType == type else {
                throw RuleDiagnostic(set.location, "\(where_) holds \(elementType)s but the value is a \(type)", expected: "a list of \(type)s")
            }
            let numbers = operand.numbers
            contains = { i, v in read(i, v).map { numbers.contains($0) } }
        default:
            let hint = value.type == .stringSet ? "has_any(wallet.reason_codes, [...]) to test a set of strings" : "a string, a number or a duration left of 'in'"
            throw RuleDiagnostic(value.location, "'in' cannot test \(Self.describe(value))", expected: hint)
        }
        let node: Reader<Bool>
        if negated {
            node = { i, v in contains(i, v).map { !$0 } }
        } else {
            node = contains
        }
        return CompiledExpression(type: .bool, node: .bool(node), location: location)
    }
}
