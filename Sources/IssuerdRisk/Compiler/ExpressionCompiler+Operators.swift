extension ExpressionCompiler {
    /// Chains of at most this many operands compile to nested two-operand closures, as the
    /// binary operations they stand for always did (one closure call per operator, no array);
    /// longer ones to one closure that loops over its operands, so that evaluating a chain
    /// never recurses once per operator.
    static let nestedChainOperands = 4

    /// `a op b op c …` for `or`, `and`, `+ -` and `* /`: type-checked, reported and evaluated
    /// exactly as the left-nested binary operations it stands for (`((a op b) op c) …`, every
    /// operand compiled in order, an error at the same place), with no recursion per operator.
    mutating func chain(_ first: Expression, _ links: [ChainLink]) throws(RuleDiagnostic) -> CompiledExpression {
        if links.count < Self.nestedChainOperands {
            var result = try compile(first)
            for link in links {
                let rhs = try compile(link.operand)
                switch link.op {
                case .and, .or: result = try logical(link.op, result, rhs, at: link.location)
                default: result = try arithmetic(link.op, result, rhs, at: link.location)
                }
            }
            return result
        }
        switch links[0].op {
        case .and, .or: return try logicalChain(first, links)
        default: return try arithmeticChain(first, links)
        }
    }

    /// `and` / `or` with Kleene's three-valued logic: `false and unknown` is false,
    /// `true or unknown` is true, anything else involving unknown is unknown.
    func logical(
        _ op: BinaryOperator, _ lhs: CompiledExpression, _ rhs: CompiledExpression, at location: SourceLocation
    ) throws(RuleDiagnostic) -> CompiledExpression {
        let left = try Self.condition(of: op, lhs)
        let right = try Self.condition(of: op, rhs)
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

    /// The reader of one side of `and` / `or`, or why it is not a condition.
    private static func condition(
        of op: BinaryOperator, _ side: CompiledExpression
    ) throws(RuleDiagnostic) -> Reader<Bool> {
        guard case .bool(let read) = side.node else {
            throw RuleDiagnostic(
                side.location, "'\(op.rawValue)' joins conditions, but this is \(Self.describe(side))",
                expected: "a comparison or another true/false value")
        }
        return read
    }

    /// A long `or` or `and` chain in one loop, with ``logical(_:_:_:at:)``'s semantics
    /// operand after operand: `or` is true at the first true operand (the rest are not
    /// evaluated), else unknown if any operand was unknown, else false; `and` the same with
    /// true and false swapped.
    private mutating func logicalChain(
        _ first: Expression, _ links: [ChainLink]
    ) throws(RuleDiagnostic) -> CompiledExpression {
        let op = links[0].op
        var operands: [BoolOperand] = []
        operands.reserveCapacity(links.count + 1)
        let head = try compile(first)
        for link in links {
            let next = try compile(link.operand)
            if operands.isEmpty { operands.append(BoolOperand(read: try Self.condition(of: op, head))) }
            operands.append(BoolOperand(read: try Self.condition(of: op, next)))
        }
        let all = operands
        // The value that ends the chain early: true for `or`, false for `and`.
        let decisive = op == .or
        let node: Reader<Bool> = { input, velocity in
            var unknown = false
            for operand in all {
                let value = operand.read(input, velocity)
                if value == decisive { return decisive }
                if value == nil { unknown = true }
            }
            return unknown ? nil : !decisive
        }
        return CompiledExpression(type: .bool, node: .bool(node), location: links[links.count - 1].location)
    }

    /// `+ - * /` on numbers and durations; dividing by zero is unknown, never a trap.
    func arithmetic(
        _ op: BinaryOperator, _ lhs: CompiledExpression, _ rhs: CompiledExpression, at location: SourceLocation
    ) throws(RuleDiagnostic) -> CompiledExpression {
        let (left, right, result) = try Self.arithmeticOperands(op, lhs, rhs, at: location)
        let node: Reader<Double> =
            switch op {
            case .plus:
                { i, v in
                    guard let x = left(i, v), let y = right(i, v) else { return nil }
                    return x + y
                }
            case .minus:
                { i, v in
                    guard let x = left(i, v), let y = right(i, v) else { return nil }
                    return x - y
                }
            case .times:
                { i, v in
                    guard let x = left(i, v), let y = right(i, v) else { return nil }
                    return x * y
                }
            default:
                { i, v in
                    guard let x = left(i, v), let y = right(i, v), y != 0 else { return nil }
                    return x / y
                }
            }
        return CompiledExpression(type: result, node: .number(node), location: location)
    }

    /// The readers of `lhs op rhs` for `+ - * /` and the result's type, or the error.
    private static func arithmeticOperands(
        _ op: BinaryOperator, _ lhs: CompiledExpression, _ rhs: CompiledExpression,
        at location: SourceLocation
    ) throws(RuleDiagnostic) -> (Reader<Double>, Reader<Double>, RiskType) {
        guard case .number(let left) = lhs.node, case .number(let right) = rhs.node, let a = lhs.type, let b = rhs.type
        else {
            let bad = if case .number = lhs.node { rhs } else { lhs }
            throw RuleDiagnostic(
                bad.location, "'\(op.rawValue)' needs numbers or durations, but this is \(Self.describe(bad))")
        }
        let result: RiskType
        switch (op, a, b) {
        case (.plus, .number, .number), (.minus, .number, .number), (.times, .number, .number),
            (.divide, .number, .number),
            (.divide, .duration, .duration):
            result = .number
        case (.plus, .duration, .duration), (.minus, .duration, .duration), (.times, .duration, .number),
            (.times, .number, .duration),
            (.divide, .duration, .number):
            result = .duration
        default:
            throw RuleDiagnostic(
                location, "cannot apply '\(op.rawValue)' to a \(a) and a \(b)",
                expected: a == .duration || b == .duration
                    ? "durations on both sides of + and -, or a duration times a number" : "numbers")
        }
        return (left, right, result)
    }

    /// A long `+ -` or `* /` chain in one loop: the running value, operator after operator,
    /// unknown as soon as an operand is unknown (the rest are not evaluated) or a divisor is 0;
    /// the same operations in the same order as the nested binary ones, so the same result.
    private mutating func arithmeticChain(
        _ first: Expression, _ links: [ChainLink]
    ) throws(RuleDiagnostic) -> CompiledExpression {
        let head = try compile(first)
        var steps: [NumberStep] = []
        steps.reserveCapacity(links.count)
        // What the operations so far add up to, for type checking only: its reader is the
        // head's (a number reader, which is all the check looks at), never evaluated.
        var sofar = head
        for link in links {
            let next = try compile(link.operand)
            let (_, right, result) = try Self.arithmeticOperands(link.op, sofar, next, at: link.location)
            steps.append(NumberStep(op: link.op, read: right))
            sofar = CompiledExpression(type: result, node: sofar.node, location: link.location)
        }
        guard case .number(let start) = head.node else { preconditionFailure("checked by arithmeticOperands") }
        let all = steps
        let node: Reader<Double> = { input, velocity in
            guard var x = start(input, velocity) else { return nil }
            for step in all {
                guard let y = step.read(input, velocity) else { return nil }
                switch step.op {
                case .plus: x = x + y
                case .minus: x = x - y
                case .times: x = x * y
                default:
                    guard y != 0 else { return nil }
                    x = x / y
                }
            }
            return x
        }
        return CompiledExpression(type: sofar.type, node: .number(node), location: sofar.location)
    }

    /// `value in set` and `value not in set`, with the set resolved at compile time.
    func membership(
        _ value: CompiledExpression, _ set: CompiledExpression, negated: Bool, at location: SourceLocation
    ) throws(RuleDiagnostic) -> CompiledExpression {
        guard case .set(let operand) = set.node else {
            throw RuleDiagnostic(set.location, "'in' needs a list", expected: "[\"a\", \"b\"] or @list_name")
        }
        let listPhrase = operand.listName.map { "the list @\($0)" } ?? "this list"
        guard let elementType = operand.elementType else {
            throw RuleDiagnostic(set.location, "the list is empty", expected: "at least one item")
        }
        let contains: Reader<Bool>
        switch (value.node, value.type) {
        case (.enumeration(let read), .enumeration(let domain)?):
            guard elementType == .string else {
                throw RuleDiagnostic(
                    set.location, "\(listPhrase) holds \(elementType)s but \(domain.name) is a string",
                    expected: "a list of strings")
            }
            var mask: UInt64 = 0
            for name in operand.strings.sorted() {
                guard let code = domain.names.firstIndex(of: name) else {
                    throw RuleDiagnostic(
                        operand.itemLocations[name] ?? set.location,
                        "\"\(name)\" in \(listPhrase) is not a \(domain.name)",
                        expected: "one of \(domain.names.map { "\"\($0)\"" }.joined(separator: ", "))",
                        suggestion: Suggestion.nearest(to: name, in: domain.names))
                }
                mask |= 1 << UInt64(code)
            }
            let bits = mask
            contains = { i, v in read(i, v).map { bits & (1 << UInt64($0)) != 0 } }
        case (.string(let read), .string?):
            guard elementType == .string else {
                throw RuleDiagnostic(
                    set.location, "\(listPhrase) holds \(elementType)s but the value is a string",
                    expected: "a list of strings")
            }
            let strings = StringSet(operand.strings)
            contains = { i, v in read(i, v).map { strings.contains($0) } }
        case (.number(let read), let type?) where type == .number || type == .duration:
            guard elementType == type else {
                throw RuleDiagnostic(
                    set.location, "\(listPhrase) holds \(elementType)s but the value is a \(type)",
                    expected: "a list of \(type)s")
            }
            let numbers = operand.numbers
            contains = { i, v in read(i, v).map { numbers.contains($0) } }
        default:
            let hint =
                value.type == .stringSet
                ? "has_any(wallet.reason_codes, [...]) to test a set of strings"
                : "a string, a number or a duration left of 'in'"
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

/// One operand of a long `and` / `or` chain (a closure kept in a struct keeps its natural
/// calling convention in an array: see ``RuleCondition``).
private struct BoolOperand: Sendable {
    let read: Reader<Bool>
}

/// One `op operand` step of a long arithmetic chain.
private struct NumberStep: Sendable {
    let op: BinaryOperator
    let read: Reader<Double>
}
