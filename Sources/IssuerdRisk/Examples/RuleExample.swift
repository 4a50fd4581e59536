/// One example case from a `.cases` file: an input, and the decision it must produce.
///
/// ```
/// example "device on the block list is declined"
///   given {
///     card.status: "active"
///     device.id: "dev000200"
///     attempts(card, 24h): 1
///   }
///   expect orange
///   hits [device.blocked]
///   stepup [app]
/// end
/// ```
/// Attributes not given are unknown. `hits` (optional) is the exact set of rule ids that must
/// hit, invariants and shadow rules included; `stepup` (optional) the exact methods offered.
public struct RuleExample: Sendable {
    /// A `key: value` line of the `given` block.
    public struct Given: Sendable {
        /// An attribute name, or a velocity call as written (`attempts(card, 24h)`).
        public var key: String
        /// True when the key is a velocity call.
        public var isVelocity: Bool
        /// The value given (``RiskValue/unknown`` for `unknown`).
        public var value: RiskValue
        /// Where the key is written.
        public var location: SourceLocation
    }

    /// The quoted name.
    public var name: String
    /// Where `example` is written.
    public var location: SourceLocation
    /// The `given` block, in order.
    public var given: [Given]
    /// The expected flow.
    public var expectedFlow: Flow
    /// The exact rule ids expected to hit, if given.
    public var expectedHits: [String]?
    /// The exact step-up methods expected, if given.
    public var expectedStepUp: StepUpMethods?
}

/// Parses `.cases` files.
enum RuleExampleParser {
    static func parse(file: String, text: String) -> (examples: [RuleExample], diagnostics: [RuleDiagnostic]) {
        let parsed = TokenStream.parseBlocks(file: file, text: text, block: example) { stream in
            while !stream.atEnd, !stream.current.isWord("example") { stream.advance() }
        }
        return (parsed.blocks, parsed.diagnostics)
    }

    private static func example(_ stream: inout TokenStream) throws(RuleDiagnostic) -> RuleExample {
        try stream.checkValid()
        guard stream.current.isWord("example") else {
            throw RuleDiagnostic(
                stream.current.location, "unexpected \(stream.current.display)", expected: "'example \"name\"'")
        }
        let location = stream.current.location
        stream.advance()
        guard case .string(let name) = stream.current.kind else {
            throw RuleDiagnostic(
                stream.current.location, "unexpected \(stream.current.display)",
                expected: "the example's name as a \"quoted string\"")
        }
        stream.advance()
        guard stream.current.isWord("given") else {
            throw RuleDiagnostic(stream.current.location, "unexpected \(stream.current.display)", expected: "'given {'")
        }
        stream.advance()
        try stream.expect(.leftBrace, "'{' to open the given block")
        var given: [RuleExample.Given] = []
        while !stream.current.isSymbol(.rightBrace) {
            stream.startExpression()
            let keyExpression = try stream.primary()
            let isVelocity: Bool
            switch keyExpression.kind {
            case .name: isVelocity = false
            case .call: isVelocity = true
            default:
                throw RuleDiagnostic(
                    keyExpression.location, "unexpected \(keyExpression.text)",
                    expected: "an attribute name or a velocity call, then ':'")
            }
            try stream.expect(.colon, "':' after \(keyExpression.text)")
            stream.startExpression()
            let valueExpression = try stream.primary()
            given.append(
                RuleExample.Given(
                    key: keyExpression.text, isVelocity: isVelocity, value: try literal(valueExpression),
                    location: keyExpression.location))
            if stream.current.isSymbol(.comma) { stream.advance() }
        }
        stream.advance()
        guard stream.current.isWord("expect") else {
            throw RuleDiagnostic(
                stream.current.location, "unexpected \(stream.current.display)",
                expected: "'expect green', 'expect yellow' or 'expect orange'")
        }
        stream.advance()
        let flowWord = try stream.word("green, yellow or orange")
        guard let flow = Flow(name: flowWord.text) else {
            throw RuleDiagnostic(
                flowWord.location, "unknown flow '\(flowWord.text)'", expected: "green, yellow or orange",
                suggestion: Suggestion.nearest(to: flowWord.text, in: ["green", "yellow", "orange"]))
        }
        var example = RuleExample(name: name, location: location, given: given, expectedFlow: flow)
        while !stream.current.isWord("end") {
            if stream.current.isWord("hits") {
                stream.advance()
                example.expectedHits = try words(&stream, "a rule id").map(\.text)
            } else if stream.current.isWord("stepup") {
                stream.advance()
                var methods: StepUpMethods = []
                for word in try words(&stream, "a step-up method") {
                    guard let method = StepUpMethods(name: word.text) else {
                        throw RuleDiagnostic(
                            word.location, "unknown step-up method '\(word.text)'",
                            expected: StepUpMethods.names.joined(separator: ", "),
                            suggestion: Suggestion.nearest(to: word.text, in: StepUpMethods.names))
                    }
                    methods.insert(method)
                }
                example.expectedStepUp = methods
            } else {
                throw RuleDiagnostic(
                    stream.current.location, "unexpected \(stream.current.display)",
                    expected: "'hits [...]', 'stepup [...]' or 'end'")
            }
        }
        stream.advance()
        return example
    }

    private static func words(_ stream: inout TokenStream, _ what: String) throws(RuleDiagnostic) -> [LocatedWord] {
        try stream.expect(.leftBracket, "'[' and a list")
        var result: [LocatedWord] = []
        while !stream.current.isSymbol(.rightBracket) {
            result.append(try stream.word(what))
            if stream.current.isSymbol(.comma) { stream.advance() } else { break }
        }
        try stream.expect(.rightBracket, "',' or ']'")
        return result
    }

    private static func literal(_ expression: Expression) throws(RuleDiagnostic) -> RiskValue {
        switch expression.kind {
        case .string(let text): return .string(text)
        case .number(let value): return .number(value)
        case .duration(let seconds): return .duration(seconds)
        case .bool(let flag): return .bool(flag)
        case .name("unknown"): return .unknown
        case .list(let items):
            var strings: [String] = []
            for item in items {
                guard case .string(let text) = item.kind else {
                    throw RuleDiagnostic(
                        item.location, "a list value holds strings only", expected: "a \"quoted string\"")
                }
                strings.append(text)
            }
            return .strings(strings)
        default:
            throw RuleDiagnostic(
                expression.location, "unexpected \(expression.text)",
                expected: "a literal: \"text\", 3, 14d, true, [\"A\"] or unknown")
        }
    }
}
