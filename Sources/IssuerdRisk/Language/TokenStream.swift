/// A cursor over tokens with the expression grammar shared by rules and example files.
///
/// ```
/// expr       := and { "or" and }
/// and        := not { "and" not }
/// not        := "not" not | comparison
/// comparison := sum [ ("=="|"!="|"<"|"<="|">"|">=") sum | ["not"] "in" (@list | list) ]
/// sum        := product { ("+"|"-") product }
/// product    := unary { ("*"|"/") unary }
/// unary      := "-" unary | primary
/// primary    := NUMBER | DURATION | STRING | "true" | "false" | NAME | NAME "(" [expr {"," expr}] ")"
///             | "(" expr ")" | list | @list
/// list       := "[" [expr {"," expr}] "]"
/// ```
///
/// A run of one precedence level (`a or b or c`, `x + y - z`) is read into one flat
/// ``Expression/Kind/chain(_:_:)``, not a tree as deep as the run is long, and every term is
/// counted against ``RulesetLimits``: a long chain is refused where it passes the bound, and no
/// walk over what is accepted recurses more than the nesting bound allows.
struct TokenStream {
    private(set) var tokens: [Token]
    private(set) var index = 0
    /// Nesting depth, bounded so hostile input cannot exhaust the stack.
    private var depth = 0
    static let maximumDepth = 64
    /// Terms (values and operators, see ``RulesetLimits``) of the expression being parsed,
    /// and of the whole file so far.
    private var expressionTerms = 0
    private var fileTerms = 0
    /// The terms the ruleset's earlier `.rules` files used; nil where only the expression bound
    /// applies (example files).
    private let rulesetTermsBefore: Int?
    /// Set once the file's or the ruleset's total is exceeded: the rest of the file is not read.
    private(set) var exhausted = false

    /// Words that cannot be attribute or function names.
    static let reservedWords: Set<String> = [
        "and", "or", "not", "in", "true", "false", "rule", "end", "when", "example", "given", "expect",
    ]

    init(_ tokens: [Token], rulesetTermsBefore: Int? = nil) {
        self.tokens = tokens
        self.rulesetTermsBefore = rulesetTermsBefore
    }

    var current: Token { tokens[index] }

    /// Throws the lexer's diagnostic when the current token is invalid.
    func checkValid() throws(RuleDiagnostic) {
        if case .invalid(let diagnostic) = current.kind { throw diagnostic }
    }
    var atEnd: Bool { current.kind == .end }

    mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    /// Consumes `symbol` or throws naming what was expected.
    mutating func expect(_ symbol: Token.Symbol, _ what: String? = nil) throws(RuleDiagnostic) {
        try checkValid()
        guard current.isSymbol(symbol) else {
            throw RuleDiagnostic(
                current.location, "unexpected \(current.display)", expected: what ?? "'\(symbol.rawValue)'")
        }
        advance()
    }

    /// Consumes a word (not a reserved one) or throws.
    mutating func word(_ what: String) throws(RuleDiagnostic) -> LocatedWord {
        try checkValid()
        guard case .word(let text) = current.kind, !Self.reservedWords.contains(text) else {
            throw RuleDiagnostic(current.location, "unexpected \(current.display)", expected: what)
        }
        defer { advance() }
        return LocatedWord(text: text, location: current.location)
    }

    /// Starts counting the terms of a new top-level expression (a rule's condition, an
    /// example's key or value).
    mutating func startExpression() { expressionTerms = 0 }

    /// Counts one term written at `location`.
    ///
    /// - Throws: Past ``RulesetLimits/conditionTerms`` in the expression, or past the file's or
    ///   the ruleset's total (which also stops the file: see ``exhausted``).
    private mutating func count(_ location: SourceLocation) throws(RuleDiagnostic) {
        expressionTerms += 1
        fileTerms += 1
        if expressionTerms > RulesetLimits.conditionTerms {
            throw RuleDiagnostic(
                location, "expression is longer than \(RulesetLimits.conditionTerms) terms (values and operators)",
                expected:
                    "a shorter condition: split it into several rules, or move a long list of values to an @list file")
        }
        guard let before = rulesetTermsBefore else { return }
        if fileTerms > RulesetLimits.fileTerms {
            exhausted = true
            throw RuleDiagnostic(
                location,
                "the conditions of this file are longer than \(RulesetLimits.fileTerms) terms in all; the rest of the file is not read",
                expected: "the rules split over several files")
        }
        if before + fileTerms > RulesetLimits.rulesetTerms {
            exhausted = true
            throw RuleDiagnostic(
                location,
                "the conditions of the ruleset are longer than \(RulesetLimits.rulesetTerms) terms in all .rules files together; the rest of the ruleset is not read",
                expected: "fewer or shorter rules")
        }
    }

    /// `first` alone, or the chain it starts.
    private static func chain(_ first: Expression, _ links: [ChainLink]) -> Expression {
        guard let last = links.last else { return first }
        return Expression(kind: .chain(first, links), location: last.location)
    }

    mutating func expression() throws(RuleDiagnostic) -> Expression {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else {
            throw RuleDiagnostic(current.location, "expression is nested more than \(Self.maximumDepth) levels deep")
        }
        let first = try conjunction()
        var links: [ChainLink] = []
        while current.isWord("or") {
            let location = current.location
            try count(location)
            advance()
            links.append(ChainLink(op: .or, location: location, operand: try conjunction()))
        }
        // `AND`, `Or`…: the words are lower case only.
        if case .word(let word) = current.kind, ["and", "or"].contains(word.lowercased()) {
            throw RuleDiagnostic(
                current.location, "'\(word)' is not an operator", expected: "'\(word.lowercased())' (lower case)",
                suggestion: word.lowercased())
        }
        return Self.chain(first, links)
    }

    private mutating func conjunction() throws(RuleDiagnostic) -> Expression {
        let first = try negation()
        var links: [ChainLink] = []
        while current.isWord("and") {
            let location = current.location
            try count(location)
            advance()
            links.append(ChainLink(op: .and, location: location, operand: try negation()))
        }
        return Self.chain(first, links)
    }

    private mutating func negation() throws(RuleDiagnostic) -> Expression {
        guard current.isWord("not") else { return try comparison() }
        let location = current.location
        advance()
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw RuleDiagnostic(location, "too many nested 'not'") }
        try count(location)
        return Expression(kind: .not(try negation()), location: location)
    }

    private mutating func comparison() throws(RuleDiagnostic) -> Expression {
        let left = try sum()
        try checkValid()
        let location = current.location
        if case .symbol(let symbol) = current.kind, let op = BinaryOperator(rawValue: symbol.rawValue), op.isComparison
        {
            try count(location)
            advance()
            return Expression(kind: .binary(op, left, try sum()), location: location)
        }
        if current.isSymbol(.assign) {
            // `=>` and `=<`, the two-character comparisons written the other way round.
            let next = tokens[index + 1]
            if next.location.line == location.line, next.location.column == location.column + 1,
                next.isSymbol(.greater) || next.isSymbol(.less)
            {
                let (written, meant) = next.isSymbol(.greater) ? ("=>", ">=") : ("=<", "<=")
                throw RuleDiagnostic(
                    location, "'\(written)' is not a comparison", expected: "'\(meant)' to compare", suggestion: meant)
            }
            throw RuleDiagnostic(location, "'=' is not a comparison", expected: "'==' to compare", suggestion: "==")
        }
        var negated = false
        if current.isWord("not"), tokens[index + 1].isWord("in") {
            negated = true
            advance()
        }
        if current.isWord("in") {
            try count(location)
            advance()
            guard current.isSymbol(.leftBracket) || { if case .listReference = current.kind { true } else { false } }()
            else {
                throw RuleDiagnostic(
                    current.location, "unexpected \(current.display) after 'in'",
                    expected: "a list such as [\"a\", \"b\"] or @list_name")
            }
            return Expression(kind: .membership(left, try primary(), negated: negated), location: location)
        }
        return left
    }

    private mutating func sum() throws(RuleDiagnostic) -> Expression {
        let first = try product()
        var links: [ChainLink] = []
        while case .symbol(let symbol) = current.kind, symbol == .plus || symbol == .minus {
            let location = current.location
            try count(location)
            advance()
            links.append(ChainLink(op: symbol == .plus ? .plus : .minus, location: location, operand: try product()))
        }
        return Self.chain(first, links)
    }

    private mutating func product() throws(RuleDiagnostic) -> Expression {
        let first = try unary()
        var links: [ChainLink] = []
        while case .symbol(let symbol) = current.kind, symbol == .times || symbol == .divide {
            let location = current.location
            try count(location)
            advance()
            links.append(ChainLink(op: symbol == .times ? .times : .divide, location: location, operand: try unary()))
        }
        return Self.chain(first, links)
    }

    private mutating func unary() throws(RuleDiagnostic) -> Expression {
        guard current.isSymbol(.minus) else { return try primary() }
        let location = current.location
        advance()
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw RuleDiagnostic(location, "too many nested '-'") }
        try count(location)
        return Expression(kind: .negate(try unary()), location: location)
    }

    mutating func primary() throws(RuleDiagnostic) -> Expression {
        try checkValid()
        let token = current
        // Every value is a term; a parenthesised group is the terms inside it.
        if !token.isSymbol(.leftParen) { try count(token.location) }
        switch token.kind {
        case .number(let value):
            advance()
            return Expression(kind: .number(value), location: token.location)
        case .duration(let seconds):
            advance()
            return Expression(kind: .duration(seconds), location: token.location)
        case .string(let text):
            advance()
            return Expression(kind: .string(text), location: token.location)
        case .listReference(let name):
            advance()
            return Expression(kind: .listReference(name), location: token.location)
        case .word("true"), .word("false"):
            advance()
            return Expression(kind: .bool(token.isWord("true")), location: token.location)
        case .word(let word) where !Self.reservedWords.contains(word):
            advance()
            guard current.isSymbol(.leftParen) else { return Expression(kind: .name(word), location: token.location) }
            advance()
            var arguments: [Expression] = []
            if !current.isSymbol(.rightParen) {
                arguments.append(try expression())
                while current.isSymbol(.comma) {
                    advance()
                    arguments.append(try expression())
                }
            }
            try expect(.rightParen, "',' or ')' to close the call of \(word)")
            return Expression(kind: .call(word, arguments), location: token.location)
        case .symbol(.leftParen):
            advance()
            let inner = try expression()
            try expect(.rightParen, "')'")
            return inner
        case .symbol(.leftBracket):
            advance()
            var items: [Expression] = []
            if !current.isSymbol(.rightBracket) {
                items.append(try expression())
                while current.isSymbol(.comma) {
                    advance()
                    items.append(try expression())
                }
            }
            try expect(.rightBracket, "',' or ']' to close the list")
            return Expression(kind: .list(items), location: token.location)
        default:
            throw RuleDiagnostic(
                token.location, "unexpected \(token.display)",
                expected: "a value: an attribute, a number, a duration, a string, true/false, a list or a function call"
            )
        }
    }
}

extension TokenStream {
    /// Tokenises `text` and parses it block after block, so that one file reports every broken
    /// block at once: a block that fails records its diagnostic and `recover` skips to where the
    /// next block can start. A lexical error stops the file (nothing after it can be trusted).
    ///
    /// - Parameters:
    ///   - rulesetTermsBefore: For a `.rules` file, the terms of the ruleset's earlier files, so
    ///     that the file's and the ruleset's totals are enforced; nil for other files.
    ///   - block: Parses one block (a `rule … end`, an `example …`) from the stream.
    ///   - recover: Advances past a failed block.
    /// - Returns: The blocks that parsed, a diagnostic for each one that did not, and the terms
    ///   the file's expressions hold.
    static func parseBlocks<Block>(
        file: String, text: String, rulesetTermsBefore: Int? = nil,
        block: (inout TokenStream) throws(RuleDiagnostic) -> Block, recover: (inout TokenStream) -> Void
    ) -> (blocks: [Block], diagnostics: [RuleDiagnostic], terms: Int) {
        let tokens: [Token]
        do {
            tokens = try Lexer.tokenize(file: file, text: text)
        } catch {
            return ([], [error], 0)
        }
        var stream = TokenStream(tokens, rulesetTermsBefore: rulesetTermsBefore)
        var blocks: [Block] = []
        var diagnostics: [RuleDiagnostic] = []
        while !stream.atEnd {
            do {
                blocks.append(try block(&stream))
            } catch {
                diagnostics.append(error)
                // Past the file's or the ruleset's total, nothing more of the file is read.
                if stream.exhausted { break }
                recover(&stream)
            }
        }
        return (blocks, diagnostics, stream.fileTerms)
    }
}
