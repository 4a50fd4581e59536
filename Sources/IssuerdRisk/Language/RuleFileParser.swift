/// Parses a `.rules` file into rule declarations, collecting every syntax error.
///
/// ```
/// file   := { rule }
/// rule   := "rule" ID { field } "when" expr "end"
/// field  := "title" STRING | "outcome" ("yellow" | "orange") | "reason" ID
///         | "stepup" "[" METHOD {"," METHOD} "]" | "owner" (ID | STRING) | "mode" ("live" | "shadow")
/// ```
enum RuleFileParser {
    /// The header fields, for suggestions.
    static let fields = ["title", "outcome", "reason", "stepup", "owner", "mode", "when"]

    /// The declarations that parsed, a diagnostic for each block that did not, and the terms
    /// of the file's conditions.
    ///
    /// - Parameter rulesetTermsBefore: The terms of the ruleset's earlier files, for the
    ///   ruleset's total (``RulesetLimits/rulesetTerms``).
    static func parse(
        file: String, text: String, rulesetTermsBefore: Int = 0
    ) -> (rules: [RuleDeclaration], diagnostics: [RuleDiagnostic], terms: Int) {
        let parsed = TokenStream.parseBlocks(
            file: file, text: text, rulesetTermsBefore: rulesetTermsBefore, block: rule, recover: recover)
        return (parsed.blocks, parsed.diagnostics, parsed.terms)
    }

    /// Skips to just after the failed block's `end`, or to the next `rule`.
    private static func recover(_ stream: inout TokenStream) {
        if stream.current.isWord("rule") { stream.advance() }
        while !stream.atEnd {
            if stream.current.isWord("rule") { return }
            if stream.current.isWord("end") {
                stream.advance()
                return
            }
            stream.advance()
        }
    }

    private static func rule(_ stream: inout TokenStream) throws(RuleDiagnostic) -> RuleDeclaration {
        try stream.checkValid()
        guard stream.current.isWord("rule") else {
            let suggestion: String? =
                if case .word(let word) = stream.current.kind { Suggestion.nearest(to: word, in: ["rule"]) } else {
                    nil
                }
            throw RuleDiagnostic(
                stream.current.location, "unexpected \(stream.current.display)",
                expected: "'rule' to start a rule block", suggestion: suggestion)
        }
        let location = stream.current.location
        stream.advance()
        var rule = RuleDeclaration(id: try stream.word("a rule id such as wallet.low_device_score"), location: location)
        if rule.id.text.hasPrefix("invariant.") {
            throw RuleDiagnostic(
                rule.id.location, "rule ids starting with 'invariant.' are reserved for the built-in invariants")
        }
        while !stream.current.isWord("when") {
            try stream.checkValid()
            guard case .word(let field) = stream.current.kind, fields.contains(field) else {
                let word: String? = if case .word(let word) = stream.current.kind { word } else { nil }
                throw RuleDiagnostic(
                    stream.current.location, "unexpected \(stream.current.display) in rule '\(rule.id.text)'",
                    expected: "a field (\(fields.joined(separator: ", ")))",
                    suggestion: word.flatMap { Suggestion.nearest(to: $0, in: fields) })
            }
            let fieldLocation = stream.current.location
            stream.advance()
            func duplicate() -> RuleDiagnostic {
                RuleDiagnostic(fieldLocation, "'\(field)' is given twice in rule '\(rule.id.text)'")
            }
            switch field {
            case "title":
                guard rule.title == nil else { throw duplicate() }
                guard case .string(let title) = stream.current.kind else {
                    throw RuleDiagnostic(
                        stream.current.location, "unexpected \(stream.current.display)",
                        expected: "the title as a \"quoted string\"")
                }
                rule.title = title
                stream.advance()
            case "outcome":
                guard rule.outcome == nil else { throw duplicate() }
                rule.outcome = try stream.word("yellow or orange")
            case "reason":
                guard rule.reason == nil else { throw duplicate() }
                rule.reason = try stream.word("a reason code such as WALLET_LOW_SCORE")
            case "stepup":
                guard rule.stepUp == nil else { throw duplicate() }
                rule.stepUpLocation = fieldLocation
                try stream.expect(.leftBracket, "'[' and the allowed methods, e.g. [app, email]")
                var methods: [LocatedWord] = []
                repeat {
                    if stream.current.isSymbol(.comma) { stream.advance() }
                    methods.append(try stream.word("a step-up method (\(StepUpMethods.names.joined(separator: ", ")))"))
                } while stream.current.isSymbol(.comma)
                try stream.expect(.rightBracket, "',' or ']'")
                rule.stepUp = methods
            case "owner":
                guard rule.owner == nil else { throw duplicate() }
                if case .string(let owner) = stream.current.kind {
                    rule.owner = LocatedWord(text: owner, location: stream.current.location)
                    stream.advance()
                } else {
                    rule.owner = try stream.word("the owning team, e.g. fraud_ops or \"fraud-ops\"")
                }
            default:
                guard rule.mode == nil else { throw duplicate() }
                rule.mode = try stream.word("live or shadow")
            }
        }
        stream.advance()
        stream.startExpression()
        rule.condition = try stream.expression()
        try stream.checkValid()
        guard stream.current.isWord("end") else {
            throw RuleDiagnostic(
                stream.current.location,
                "unexpected \(stream.current.display) after the condition of rule '\(rule.id.text)'",
                expected: "an operator (and, or, ==, <, in, …) or 'end'")
        }
        stream.advance()
        return rule
    }
}
