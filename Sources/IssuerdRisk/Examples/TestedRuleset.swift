/// A ruleset whose examples all pass: the only kind a reload may serve.
///
/// Compiling is not enough: a half-finished rule compiles and still decides wrongly. Its
/// examples (`*.cases`, as `issuerd rules test` runs them) are what says it decides as its
/// author meant, so a failing example refuses the version exactly as a syntax error does.
/// A rule that no example makes hit is reported (``uncoveredRules``) but does not refuse it:
/// `rules test` exits 1 for it, a reload only logs it.
public struct TestedRuleset: Sendable {
    /// The compiled ruleset.
    public var ruleset: Ruleset
    /// The files it was compiled from, sorted by path.
    public var files: [RulesetFile]
    /// Examples that passed (every example, since a failure throws).
    public var passed: Int
    /// Rules that no example makes hit.
    public var uncoveredRules: [String]

    /// Compiles `files` and runs their examples.
    ///
    /// - Throws: ``RulesetError``: `rules.invalid` when the files or examples do not compile,
    ///   `rules.examples_failed` naming each failing example at its position.
    public init(files: [RulesetFile], contentHasher: @escaping ContentHasher) throws(RulesetError) {
        let ruleset = try RulesetCompiler.compile(files, contentHasher: contentHasher)
        let report = try ExampleSuite.run(files, against: ruleset)
        let failures = report.results.filter { !$0.passed }.map { result in
            RuleDiagnostic(
                result.example.location,
                "example \"\(result.example.name)\" fails: \(result.failures.joined(separator: "; "))",
                expected: "every example to pass, as issuerd rules test runs them")
        }
        guard failures.isEmpty else { throw RulesetError(code: .examplesFailed, diagnostics: failures) }
        self.ruleset = ruleset
        self.files = files.sorted { $0.path < $1.path }
        passed = report.results.count
        uncoveredRules = report.uncoveredRules
    }
}

extension RulesetError.Code {
    /// The files compile but an example does not give the decision it expects.
    public static let examplesFailed = RulesetError.Code(rawValue: "rules.examples_failed")
}

extension RulesetLoader {
    /// Reads, compiles and tests the directory (``TestedRuleset``): what every reload serves.
    ///
    /// - Throws: ``RulesetError`` (`rules.unreadable`, `rules.invalid` or `rules.examples_failed`).
    public func loadTested() throws(RulesetError) -> TestedRuleset {
        try TestedRuleset(files: files(), contentHasher: contentHasher)
    }
}
