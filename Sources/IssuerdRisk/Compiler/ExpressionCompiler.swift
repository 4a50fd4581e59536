/// Type-checks expressions against the attribute catalog, the lists and the function table,
/// and turns them into closures over ``RiskInput``.
struct ExpressionCompiler {
    /// The ruleset's lists by name.
    let lists: [String: RuleList]
    /// Every velocity query the ruleset needs, deduplicated, in first-use order.
    private(set) var queries: [VelocityQuery] = []
    private var queryIndex: [VelocityQuery: Int] = [:]
    /// The values the rule being compiled reads, for its explanation.
    private(set) var reads: [ValueRead] = []
    private var readNames: Set<String> = []
    /// Lists referenced by any rule.
    private(set) var usedLists: Set<String> = []

    /// The built-in functions, for suggestions.
    static let functionNames = ["known", "has", "has_any", "size"] + VelocityMetric.allCases.map(\.functionName)

    init(lists: [String: RuleList]) { self.lists = lists }

    /// Compiles a rule condition, which must be a bool.
    mutating func condition(_ expression: Expression) throws(RuleDiagnostic) -> (Reader<Bool>, [ValueRead]) {
        reads = []
        readNames = []
        let compiled = try compile(expression)
        guard case .bool(let read) = compiled.node else {
            throw RuleDiagnostic(
                expression.location, "a condition must be true or false, but this is \(Self.describe(compiled))",
                expected: "a comparison such as wallet.device_score <= 2")
        }
        return (read, reads)
    }

    /// Compiles any expression.
    mutating func compile(_ expression: Expression) throws(RuleDiagnostic) -> CompiledExpression {
        let location = expression.location
        switch expression.kind {
        case .number(let value):
            return CompiledExpression(
                type: .number, node: .number { _, _ in value }, constant: .number(value), location: location)
        case .duration(let seconds):
            return CompiledExpression(
                type: .duration, node: .number { _, _ in seconds }, constant: .duration(seconds), location: location)
        case .string(let text):
            return CompiledExpression(
                type: .string, node: .string { _, _ in text }, constant: .string(text), location: location)
        case .bool(let flag):
            return CompiledExpression(
                type: .bool, node: .bool { _, _ in flag }, constant: .bool(flag), location: location)
        case .name(let name):
            return try attribute(name, at: location)
        case .list(let items):
            return try literalSet(items, at: location)
        case .listReference(let name):
            return try listReference(name, at: location)
        case .call(let name, let arguments):
            return try call(name, arguments, at: location)
        case .not(let inner):
            let operand = try compile(inner)
            guard case .bool(let read) = operand.node else {
                throw RuleDiagnostic(inner.location, "'not' needs true or false, but this is \(Self.describe(operand))")
            }
            return CompiledExpression(
                type: .bool, node: .bool { input, velocity in read(input, velocity).map { !$0 } }, location: location)
        case .negate(let inner):
            let operand = try compile(inner)
            guard case .number(let read) = operand.node, operand.type == .number || operand.type == .duration else {
                throw RuleDiagnostic(
                    inner.location, "'-' needs a number or a duration, but this is \(Self.describe(operand))")
            }
            switch operand.constant {
            case .number(let value):
                return CompiledExpression(
                    type: .number, node: .number { _, _ in -value }, constant: .number(-value), location: location)
            case .duration(let value):
                return CompiledExpression(
                    type: .duration, node: .number { _, _ in -value }, constant: .duration(-value), location: location)
            default:
                return CompiledExpression(
                    type: operand.type, node: .number { input, velocity in read(input, velocity).map { -$0 } },
                    location: location)
            }
        case .binary(let op, let left, let right):
            let lhs = try compile(left)
            let rhs = try compile(right)
            switch op {
            case .and, .or: return try logical(op, lhs, rhs, at: location)
            case .plus, .minus, .times, .divide: return try arithmetic(op, lhs, rhs, at: location)
            default: return try comparison(op, lhs, rhs, at: location)
            }
        case .chain(let first, let links):
            return try chain(first, links)
        case .membership(let value, let set, let negated):
            return try membership(try compile(value), try compile(set), negated: negated, at: location)
        }
    }

    private mutating func attribute(
        _ name: String, at location: SourceLocation
    ) throws(RuleDiagnostic) -> CompiledExpression {
        if let key = VelocityKey(rawValue: name) {
            return CompiledExpression(type: nil, node: .velocityKey(key), location: location)
        }
        guard let attribute = AttributeCatalog.byName[name] else {
            throw RuleDiagnostic(
                location, "unknown attribute '\(name)'", expected: "an attribute name (see docs/rules.md)",
                suggestion: Suggestion.nearest(to: name, in: AttributeCatalog.all.map(\.name) + Self.functionNames))
        }
        if readNames.insert(name).inserted {
            reads.append(ValueRead(name: name) { input, _ in attribute.value(in: input) })
        }
        let node: CompiledExpression.Node =
            switch attribute.access {
            case .bool(let read): .bool(read)
            case .number(let read), .duration(let read): .number(read)
            case .string(let read): .string(read)
            case .enumeration(let read): .enumeration(read)
            case .stringSet(let read): .stringSet(read)
            }
        return CompiledExpression(type: attribute.type, node: node, location: location)
    }

    private mutating func listReference(
        _ name: String, at location: SourceLocation
    ) throws(RuleDiagnostic) -> CompiledExpression {
        guard let list = lists[name] else {
            throw RuleDiagnostic(
                location, "unknown list '@\(name)'", expected: "a list defined by a file \(name).list beside the rules",
                suggestion: Suggestion.nearest(to: name, in: lists.keys).map { "@" + $0 })
        }
        usedLists.insert(name)
        let operand = SetOperand(
            strings: list.strings, numbers: list.numbers, elementType: list.type == .string ? .string : .number,
            listName: name)
        return CompiledExpression(type: nil, node: .set(operand), location: location)
    }

    private mutating func literalSet(
        _ items: [Expression], at location: SourceLocation
    ) throws(RuleDiagnostic) -> CompiledExpression {
        var operand = SetOperand()
        for item in items {
            let compiled = try compile(item)
            let itemType: RiskType
            switch compiled.constant {
            case .string(let text):
                operand.strings.insert(text)
                operand.itemLocations[text] = item.location
                itemType = .string
            case .number(let value):
                operand.numbers.insert(value)
                itemType = .number
            case .duration(let value):
                operand.numbers.insert(value)
                itemType = .duration
            default:
                throw RuleDiagnostic(
                    item.location, "a list holds literal values only", expected: "a string, a number or a duration")
            }
            if let elementType = operand.elementType, elementType != itemType {
                throw RuleDiagnostic(
                    item.location, "list mixes \(elementType) and \(itemType) items", expected: "items of one type")
            }
            operand.elementType = itemType
        }
        return CompiledExpression(type: nil, node: .set(operand), location: location)
    }

    /// Registers a velocity query and returns its slot in the request's velocity values.
    ///
    /// - Throws: At `location` (the call), for a query past ``RulesetLimits/velocityQueries``
    ///   distinct ones.
    mutating func slot(for query: VelocityQuery, at location: SourceLocation) throws(RuleDiagnostic) -> Int {
        if let index = queryIndex[query] { return index }
        guard queries.count < RulesetLimits.velocityQueries else {
            throw RuleDiagnostic(
                location,
                "\(query) is one distinct velocity value too many: a ruleset may read at most \(RulesetLimits.velocityQueries)",
                expected: "a window or key another rule already uses")
        }
        queryIndex[query] = queries.count
        queries.append(query)
        return queries.count - 1
    }

    /// Records a value read for the rule being compiled.
    mutating func noteRead(_ read: ValueRead) {
        if readNames.insert(read.name).inserted { reads.append(read) }
    }

    /// "a number", "the list @x", … for messages.
    static func describe(_ compiled: CompiledExpression) -> String {
        switch compiled.node {
        case .set(let operand): operand.listName.map { "the list @\($0)" } ?? "a list"
        case .velocityKey(let key): "the velocity key '\(key.rawValue)'"
        default: compiled.type.map { "a \($0)" } ?? "a value"
        }
    }
}
