extension ExpressionCompiler {
    /// The shortest and longest velocity windows; bounds the history a query may scan.
    static let windowRange: ClosedRange<Double> = 60...(400 * 86_400)

    /// Built-in functions: `known`, `has`, `has_any`, `size`, and the velocity functions.
    mutating func call(
        _ name: String, _ arguments: [Expression], at location: SourceLocation
    ) throws(RuleDiagnostic) -> CompiledExpression {
        if let metric = VelocityMetric(rawValue: name) {
            return try velocity(metric, arguments, at: location)
        }
        let compiled = try arguments.map { argument throws(RuleDiagnostic) in try compile(argument) }
        func arity(_ count: Int, _ signature: String) throws(RuleDiagnostic) {
            guard compiled.count == count else {
                throw RuleDiagnostic(
                    location, "\(name) takes \(count) argument\(count == 1 ? "" : "s"), not \(compiled.count)",
                    expected: signature)
            }
        }
        switch name {
        case "known":
            try arity(1, "known(attribute)")
            guard let known = compiled[0].knownReader else {
                throw RuleDiagnostic(
                    compiled[0].location, "known() needs a value, but this is \(Self.describe(compiled[0]))")
            }
            return CompiledExpression(type: .bool, node: .bool(known), location: location)
        case "has":
            try arity(2, "has(wallet.reason_codes, \"CODE\")")
            let set = try stringSet(compiled[0], name)
            guard case .string(let text)? = compiled[1].constant else {
                throw RuleDiagnostic(
                    compiled[1].location, "has() needs a string literal as its second argument",
                    expected: "a \"quoted string\"")
            }
            try Self.checkReasonCodes([text], compiled[1].location, [:], listName: nil)
            return CompiledExpression(
                type: .bool, node: .bool { i, v in set(i, v).map { $0.contains(text) } }, location: location)
        case "has_any":
            try arity(2, "has_any(wallet.reason_codes, [\"A\", \"B\"]) or has_any(wallet.reason_codes, @list)")
            let set = try stringSet(compiled[0], name)
            guard case .set(let operand) = compiled[1].node, operand.elementType == .string else {
                throw RuleDiagnostic(
                    compiled[1].location, "has_any() needs a list of strings as its second argument",
                    expected: "[\"A\", \"B\"] or @list")
            }
            try Self.checkReasonCodes(
                operand.strings.sorted(), compiled[1].location, operand.itemLocations, listName: operand.listName)
            let wanted = StringSet(operand.strings)
            let node: Reader<Bool> = { i, v in
                guard let values = set(i, v) else { return nil }
                for value in values where wanted.contains(value) { return true }
                return false
            }
            return CompiledExpression(type: .bool, node: .bool(node), location: location)
        case "size":
            try arity(1, "size(wallet.reason_codes)")
            let set = try stringSet(compiled[0], name)
            return CompiledExpression(
                type: .number, node: .number { i, v in set(i, v).map { Double($0.count) } }, location: location)
        default:
            throw RuleDiagnostic(
                location, "unknown function '\(name)'",
                expected: "one of \(Self.functionNames.joined(separator: ", "))",
                suggestion: Suggestion.nearest(to: name, in: Self.functionNames))
        }
    }

    /// Reason codes are a closed vocabulary: a misspelt one would never match.
    private static func checkReasonCodes(
        _ codes: [String], _ location: SourceLocation, _ itemLocations: [String: SourceLocation], listName: String?
    ) throws(RuleDiagnostic) {
        for code in codes where !WalletReasonCodes.names.contains(code) {
            throw RuleDiagnostic(
                itemLocations[code] ?? location,
                "\"\(code)\"\(listName.map { " in @\($0)" } ?? "") is not a wallet reason code",
                expected: "a name from the reason-code table in docs/rules.md",
                suggestion: Suggestion.nearest(to: code, in: WalletReasonCodes.names))
        }
    }

    private func stringSet(
        _ argument: CompiledExpression, _ function: String
    ) throws(RuleDiagnostic) -> Reader<[String]> {
        guard case .stringSet(let read) = argument.node else {
            throw RuleDiagnostic(
                argument.location,
                "\(function)() needs a set of strings such as wallet.reason_codes, but this is \(Self.describe(argument))"
            )
        }
        return read
    }

    /// `attempts(card, 24h)` and friends: one slot in the request's velocity batch.
    private mutating func velocity(
        _ metric: VelocityMetric, _ arguments: [Expression], at location: SourceLocation
    ) throws(RuleDiagnostic) -> CompiledExpression {
        let keys = metric.allowedKeys.map(\.rawValue)
        let signature =
            "\(metric.functionName)(\(keys.joined(separator: "|")), WINDOW) such as \(metric.functionName)(\(keys[0]), 24h)"
        guard arguments.count == 2 else {
            throw RuleDiagnostic(
                location, "\(metric.functionName) takes 2 arguments, not \(arguments.count)", expected: signature)
        }
        guard case .name(let keyName) = arguments[0].kind, let key = VelocityKey(rawValue: keyName) else {
            throw RuleDiagnostic(
                arguments[0].location, "the first argument of \(metric.functionName) is what to group by",
                expected: keys.joined(separator: " or "),
                suggestion: {
                    if case .name(let word) = arguments[0].kind { Suggestion.nearest(to: word, in: keys) } else { nil }
                }())
        }
        guard metric.allowedKeys.contains(key) else {
            throw RuleDiagnostic(
                arguments[0].location, "\(metric.functionName) cannot be grouped by \(keyName)",
                expected: keys.joined(separator: " or "))
        }
        guard case .duration(let seconds) = arguments[1].kind else {
            let suggestion: String? =
                if case .number(let n) = arguments[1].kind { RiskValue.format(n) + "d" } else { nil }
            throw RuleDiagnostic(
                arguments[1].location, "the window of \(metric.functionName) must be a duration literal",
                expected: "a window such as 30m, 24h or 7d", suggestion: suggestion)
        }
        guard Self.windowRange.contains(seconds), seconds.rounded() == seconds else {
            throw RuleDiagnostic(
                arguments[1].location, "window \(RiskValue.formatDuration(seconds)) is out of range",
                expected: "whole seconds from 1m to 400d")
        }
        let query = VelocityQuery(metric: metric, key: key, windowSeconds: Int(seconds))
        let index = try slot(for: query, at: location)
        noteRead(
            ValueRead(name: query.description) { _, velocity in
                index < velocity.count ? velocity[index].map { .number(Double($0)) } ?? .unknown : .unknown
            })
        return CompiledExpression(
            type: .number, node: .number { _, velocity in velocity[index].map(Double.init) }, location: location)
    }
}
