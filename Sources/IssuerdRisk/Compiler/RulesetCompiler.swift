/// Compiles the files of a ruleset (`*.rules`, `*.list`; other files only count towards the
/// version) into a ``Ruleset``, or refuses all of it with every positioned error.
public enum RulesetCompiler {
    /// Compiles `files`.
    ///
    /// - Parameters:
    ///   - files: Every file of the ruleset directory, paths relative to it.
    ///   - contentHasher: Computes the version from ``RulesetContent/canonicalBytes(of:)``.
    /// - Returns: The ruleset.
    /// - Throws: ``RulesetError`` listing every syntax, name, type and duplicate-id error.
    public static func compile(_ files: [RulesetFile], contentHasher: ContentHasher) throws(RulesetError) -> Ruleset {
        var diagnostics: [RuleDiagnostic] = []
        let sorted = files.sorted { $0.path < $1.path }

        var lists: [String: RuleList] = [:]
        for file in sorted where file.path.hasSuffix(".list") {
            let name = file.baseName
            let start = SourceLocation(file: file.path, line: 1, column: 1)
            guard isIdentifier(name) else {
                diagnostics.append(
                    RuleDiagnostic(
                        start, "list name '\(name)' is not usable after '@'", expected: "letters, digits and '_' only"))
                continue
            }
            if let existing = lists[name] {
                diagnostics.append(
                    RuleDiagnostic(start, "list '@\(name)' is defined twice (also in \(existing.location.file))"))
                continue
            }
            do {
                lists[name] = try RuleList.parse(name: name, file: file.path, text: file.contents)
            } catch {
                diagnostics.append(error)
            }
        }

        var compiler = ExpressionCompiler(lists: lists)
        var rules: [Rule] = []
        var conditions: [RuleCondition] = []
        var reads: [[ValueRead]] = []
        var seen: [String: SourceLocation] = [:]
        var terms = 0
        for file in sorted where file.path.hasSuffix(".rules") {
            // Past the ruleset's total the parser stops (with the error) and so do we: the
            // ruleset is refused and the remaining files could only add work.
            guard terms <= RulesetLimits.rulesetTerms else { break }
            let parsed = RuleFileParser.parse(file: file.path, text: file.contents, rulesetTermsBefore: terms)
            terms += parsed.terms
            diagnostics += parsed.diagnostics
            for declaration in parsed.rules {
                if let first = seen[declaration.id.text] {
                    diagnostics.append(
                        RuleDiagnostic(
                            declaration.id.location,
                            "duplicate rule id '\(declaration.id.text)' (first defined at \(first))",
                            expected: "a rule id used once in the ruleset"))
                    continue
                }
                seen[declaration.id.text] = declaration.id.location
                do {
                    let (rule, condition, ruleReads) = try compileRule(declaration, &compiler)
                    rules.append(rule)
                    conditions.append(RuleCondition(evaluate: condition))
                    reads.append(ruleReads)
                } catch {
                    diagnostics.append(error)
                }
            }
        }
        if diagnostics.isEmpty, rules.isEmpty {
            // An empty directory would approve everything the invariants allow: refuse it.
            diagnostics.append(
                RuleDiagnostic(
                    SourceLocation(file: sorted.first?.path ?? ".", line: 1, column: 1), "the ruleset has no rules",
                    expected: "at least one .rules file with a rule block"))
        }
        guard diagnostics.isEmpty else { throw RulesetError(diagnostics: diagnostics) }
        return Ruleset(
            version: contentHasher(RulesetContent.canonicalBytes(of: sorted)), rules: rules,
            velocityQueries: compiler.queries, listSizes: lists.mapValues(\.count),
            files: sorted.map(\.path), conditions: conditions, reads: reads)
    }

    private static func compileRule(
        _ declaration: RuleDeclaration, _ compiler: inout ExpressionCompiler
    ) throws(RuleDiagnostic) -> (Rule, Reader<Bool>, [ValueRead]) {
        let id = declaration.id.text
        func missing(_ field: String, _ example: String) -> RuleDiagnostic {
            RuleDiagnostic(
                declaration.location, "rule '\(id)' has no '\(field)'", expected: "a line such as \(example)")
        }
        guard let title = declaration.title else { throw missing("title", "title \"Device on the block list\"") }
        guard let outcomeWord = declaration.outcome else { throw missing("outcome", "outcome yellow") }
        guard let reason = declaration.reason else { throw missing("reason", "reason DEVICE_BLOCKED") }
        guard let owner = declaration.owner else { throw missing("owner", "owner fraud_ops") }
        guard let condition = declaration.condition else { throw missing("when", "when wallet.device_score <= 2") }

        guard let outcome = Flow(name: outcomeWord.text), outcome != .green else {
            throw RuleDiagnostic(
                outcomeWord.location,
                outcomeWord.text == "green"
                    ? "a rule cannot decide green (green is what is left when no rule hits)"
                    : "unknown outcome '\(outcomeWord.text)'",
                expected: "yellow or orange",
                suggestion: Suggestion.nearest(to: outcomeWord.text, in: ["yellow", "orange"]))
        }
        var mode = RuleMode.live
        if let modeWord = declaration.mode {
            guard let parsed = RuleMode(rawValue: modeWord.text) else {
                throw RuleDiagnostic(
                    modeWord.location, "unknown mode '\(modeWord.text)'", expected: "live or shadow",
                    suggestion: Suggestion.nearest(to: modeWord.text, in: ["live", "shadow"]))
            }
            mode = parsed
        }
        var stepUp: StepUpMethods?
        if let words = declaration.stepUp {
            guard outcome == .yellow else {
                throw RuleDiagnostic(
                    declaration.stepUpLocation ?? declaration.location, "'stepup' only applies to yellow rules",
                    expected: "outcome yellow, or no stepup line")
            }
            var methods: StepUpMethods = []
            for word in words {
                guard let method = StepUpMethods(name: word.text) else {
                    throw RuleDiagnostic(
                        word.location, "unknown step-up method '\(word.text)'",
                        expected: StepUpMethods.names.joined(separator: ", "),
                        suggestion: Suggestion.nearest(to: word.text, in: StepUpMethods.names))
                }
                methods.insert(method)
            }
            stepUp = methods
        }
        let (reader, reads) = try compiler.condition(condition)
        let rule = Rule(
            id: id, title: title, outcome: outcome, reason: reason.text, stepUp: stepUp, owner: owner.text, mode: mode,
            location: declaration.location, conditionText: condition.text)
        return (rule, reader, reads)
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first,
            first == "_" || ("a"..."z").contains(first) || ("A"..."Z").contains(first)
        else { return false }
        return name.unicodeScalars.allSatisfy {
            $0 == "_" || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
        }
    }
}
