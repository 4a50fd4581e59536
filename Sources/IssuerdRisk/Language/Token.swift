/// One lexical token of a rules or examples file.
struct Token: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// A name: keyword, rule id, attribute (`wallet.device_score`), function or method.
        case word(String)
        case number(Double)
        /// Seconds.
        case duration(Double)
        case string(String)
        /// `@name`.
        case listReference(String)
        case symbol(Symbol)
        /// Text that starts no token; the parser reports the diagnostic when it reaches it,
        /// so one bad character costs one rule, not the whole file.
        case invalid(RuleDiagnostic)
        case end
    }

    enum Symbol: String, Sendable {
        case leftParen = "("
        case rightParen = ")"
        case leftBracket = "["
        case rightBracket = "]"
        case leftBrace = "{"
        case rightBrace = "}"
        case comma = ","
        case colon = ":"
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case plus = "+"
        case minus = "-"
        case times = "*"
        case divide = "/"
        case assign = "="
    }

    var kind: Kind
    var location: SourceLocation

    /// How the token reads in an error message.
    var display: String {
        switch kind {
        case .word(let word): "'\(word)'"
        case .number(let value): "'\(RiskValue.format(value))'"
        case .duration(let seconds): "'\(RiskValue.formatDuration(seconds))'"
        case .string(let text): "\"\(text)\""
        case .listReference(let name): "'@\(name)'"
        case .symbol(let symbol): "'\(symbol.rawValue)'"
        case .invalid(let diagnostic): diagnostic.message
        case .end: "end of file"
        }
    }

    /// True for the word `word`.
    func isWord(_ word: String) -> Bool { kind == .word(word) }

    /// True for `symbol`.
    func isSymbol(_ symbol: Symbol) -> Bool { kind == .symbol(symbol) }
}
