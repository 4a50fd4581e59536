extension ExpressionCompiler {
    /// `== != < <= > >=`, type-checked, specialised when one side is a literal.
    func comparison(
        _ op: BinaryOperator, _ lhs: CompiledExpression, _ rhs: CompiledExpression, at location: SourceLocation
    ) throws(RuleDiagnostic) -> CompiledExpression {
        let equality = op == .equal || op == .notEqual
        guard let a = lhs.type, let b = rhs.type else {
            let bad = lhs.type == nil ? lhs : rhs
            throw RuleDiagnostic(
                bad.location, "cannot compare \(Self.describe(bad))",
                expected: bad.node.isSet ? "'in' to test membership in a list" : "a value")
        }
        guard a.isComparable(with: b) else {
            throw Self.mismatch(op, lhs, rhs, at: location)
        }
        let node: Reader<Bool>
        switch (lhs.node, rhs.node) {
        case (.number(let left), .number(let right)):
            if case .number(let c)? = rhs.constant ?? .none {
                node = Self.compare(op, left, constant: c)
            } else if case .duration(let c)? = rhs.constant ?? .none {
                node = Self.compare(op, left, constant: c)
            } else if case .number(let c)? = lhs.constant ?? .none {
                node = Self.compare(op.flipped, right, constant: c)
            } else if case .duration(let c)? = lhs.constant ?? .none {
                node = Self.compare(op.flipped, right, constant: c)
            } else {
                node = Self.compare(op, left, right)
            }
        case (.enumeration(let read), _) where rhs.constant != nil,
            (_, .enumeration(let read)) where lhs.constant != nil:
            guard equality else { throw Self.orderingError(op, location) }
            let (literal, enumerated) = rhs.constant != nil ? (rhs, lhs) : (lhs, rhs)
            guard case .string(let name)? = literal.constant, case .enumeration(let domain)? = enumerated.type else {
                throw Self.mismatch(op, lhs, rhs, at: location)
            }
            guard let index = domain.names.firstIndex(of: name) else {
                throw RuleDiagnostic(
                    literal.location, "\"\(name)\" is not a \(domain.name)",
                    expected: "one of \(domain.names.map { "\"\($0)\"" }.joined(separator: ", "))",
                    suggestion: Suggestion.nearest(to: name, in: domain.names))
            }
            let code = UInt8(index)
            if op == .equal {
                node = { i, v in read(i, v).map { $0 == code } }
            } else {
                node = { i, v in read(i, v).map { $0 != code } }
            }
        case (.enumeration(let left), .enumeration(let right)):
            guard equality else { throw Self.orderingError(op, location) }
            node = Self.equate(op, left, right)
        case (.bool(let left), .bool(let right)):
            guard equality else { throw Self.orderingError(op, location) }
            node = Self.equate(op, left, right)
        default:
            guard equality else { throw Self.orderingError(op, location) }
            guard let left = lhs.stringReader, let right = rhs.stringReader else {
                throw Self.mismatch(op, lhs, rhs, at: location)
            }
            if case .string(let c)? = rhs.constant ?? .none {
                if op == .equal {
                    node = { i, v in left(i, v).map { $0 == c } }
                } else {
                    node = { i, v in left(i, v).map { $0 != c } }
                }
            } else {
                node = Self.equate(op, left, right)
            }
        }
        return CompiledExpression(type: .bool, node: .bool(node), location: location)
    }

    private static func mismatch(
        _ op: BinaryOperator, _ lhs: CompiledExpression, _ rhs: CompiledExpression, at location: SourceLocation
    ) -> RuleDiagnostic {
        let a = lhs.type.map { "\($0)" } ?? "value"
        let b = rhs.type.map { "\($0)" } ?? "value"
        var suggestion: String?
        if lhs.type == .duration, case .number(let n)? = rhs.constant { suggestion = RiskValue.format(n) + "d" }
        if rhs.type == .duration, case .number(let n)? = lhs.constant { suggestion = RiskValue.format(n) + "d" }
        if lhs.type == .stringSet || rhs.type == .stringSet {
            return RuleDiagnostic(
                location, "cannot use '\(op.rawValue)' on a set of strings",
                expected: "has(set, \"VALUE\") or has_any(set, [...])")
        }
        return RuleDiagnostic(
            location, "cannot compare a \(a) with a \(b) using '\(op.rawValue)'",
            expected: "a \(a) on the right", suggestion: suggestion)
    }

    private static func orderingError(_ op: BinaryOperator, _ location: SourceLocation) -> RuleDiagnostic {
        RuleDiagnostic(
            location, "'\(op.rawValue)' orders numbers and durations only",
            expected: "'==' or '!=' (or 'in' for a list)")
    }

    static func compare(_ op: BinaryOperator, _ left: @escaping Reader<Double>, constant c: Double) -> Reader<Bool> {
        switch op {
        case .equal: { i, v in left(i, v).map { $0 == c } }
        case .notEqual: { i, v in left(i, v).map { $0 != c } }
        case .less: { i, v in left(i, v).map { $0 < c } }
        case .lessOrEqual: { i, v in left(i, v).map { $0 <= c } }
        case .greater: { i, v in left(i, v).map { $0 > c } }
        default: { i, v in left(i, v).map { $0 >= c } }
        }
    }

    static func compare(
        _ op: BinaryOperator, _ left: @escaping Reader<Double>, _ right: @escaping Reader<Double>
    ) -> Reader<Bool> {
        switch op {
        case .equal:
            { i, v in
                guard let x = left(i, v), let y = right(i, v) else { return nil }
                return x == y
            }
        case .notEqual:
            { i, v in
                guard let x = left(i, v), let y = right(i, v) else { return nil }
                return x != y
            }
        case .less:
            { i, v in
                guard let x = left(i, v), let y = right(i, v) else { return nil }
                return x < y
            }
        case .lessOrEqual:
            { i, v in
                guard let x = left(i, v), let y = right(i, v) else { return nil }
                return x <= y
            }
        case .greater:
            { i, v in
                guard let x = left(i, v), let y = right(i, v) else { return nil }
                return x > y
            }
        default:
            { i, v in
                guard let x = left(i, v), let y = right(i, v) else { return nil }
                return x >= y
            }
        }
    }

    // Three non-generic copies on purpose: a generic closure factory can leave the closures
    // at the generic abstraction, which costs a thunk and a copy of the input per call.
    static func equate(
        _ op: BinaryOperator, _ left: @escaping Reader<Bool>, _ right: @escaping Reader<Bool>
    ) -> Reader<Bool> {
        if op == .equal {
            return { i, v in
                guard let x = left(i, v), let y = right(i, v) else { return nil }
                return x == y
            }
        }
        return { i, v in
            guard let x = left(i, v), let y = right(i, v) else { return nil }
            return x != y
        }
    }

    static func equate(
        _ op: BinaryOperator, _ left: @escaping Reader<UInt8>, _ right: @escaping Reader<UInt8>
    ) -> Reader<Bool> {
        if op == .equal {
            return { i, v in
                guard let x = left(i, v), let y = right(i, v) else { return nil }
                return x == y
            }
        }
        return { i, v in
            guard let x = left(i, v), let y = right(i, v) else { return nil }
            return x != y
        }
    }

    static func equate(
        _ op: BinaryOperator, _ left: @escaping Reader<String>, _ right: @escaping Reader<String>
    ) -> Reader<Bool> {
        if op == .equal {
            return { i, v in
                guard let x = left(i, v), let y = right(i, v) else { return nil }
                return x == y
            }
        }
        return { i, v in
            guard let x = left(i, v), let y = right(i, v) else { return nil }
            return x != y
        }
    }
}

extension BinaryOperator {
    /// The operator with its operands swapped: `3 < x` is `x > 3`.
    var flipped: BinaryOperator {
        switch self {
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        default: self
        }
    }
}

extension CompiledExpression.Node {
    var isSet: Bool { if case .set = self { true } else { false } }
}
