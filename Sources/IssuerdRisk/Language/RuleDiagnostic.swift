/// A position in a rules, list or example file: 1-based line and column (in characters).
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    /// The file's path relative to the ruleset directory.
    public var file: String
    /// 1-based line.
    public var line: Int
    /// 1-based column, counted in Unicode scalars.
    public var column: Int

    /// A location.
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }
}

/// One problem found while compiling a ruleset, positioned and phrased for an analyst.
public struct RuleDiagnostic: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where the problem starts.
    public var location: SourceLocation
    /// What is wrong, e.g. `unknown attribute 'wallet.acount_score'`.
    public var message: String
    /// What the compiler expected there, if it can say.
    public var expected: String?
    /// The nearest known name, for misspellings.
    public var suggestion: String?

    /// A diagnostic.
    public init(_ location: SourceLocation, _ message: String, expected: String? = nil, suggestion: String? = nil) {
        self.location = location
        self.message = message
        self.expected = expected
        self.suggestion = suggestion
    }

    /// `file:line:column: error: message; expected …; did you mean '…'?`
    public var description: String {
        var text = "\(location): error: \(message)"
        if let expected { text += "; expected \(expected)" }
        if let suggestion { text += "; did you mean '\(suggestion)'?" }
        return text
    }
}

/// A ruleset that cannot be used: every problem found, in file order.
///
/// One error anywhere refuses the whole ruleset, so a typo can never make a rule silently
/// fire or silently never fire.
public struct RulesetError: Error, Sendable, CustomStringConvertible {
    /// Stable error codes.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        /// Syntax, name, type or duplicate-id errors in the files.
        public static let invalidRules = Code(rawValue: "rules.invalid")
        /// The directory or a file could not be read.
        public static let unreadable = Code(rawValue: "rules.unreadable")
    }

    /// Why.
    public var code: Code
    /// The problems, sorted by file, line and column.
    public var diagnostics: [RuleDiagnostic]
    /// A message for failures without a position (e.g. an unreadable directory).
    public var detail: String?

    /// An error with positioned diagnostics.
    public init(code: Code = .invalidRules, diagnostics: [RuleDiagnostic], detail: String? = nil) {
        self.code = code
        self.diagnostics = diagnostics.sorted {
            ($0.location.file, $0.location.line, $0.location.column) < (
                $1.location.file, $1.location.line, $1.location.column
            )
        }
        self.detail = detail
    }

    public var description: String {
        var lines = diagnostics.map(\.description)
        if let detail { lines.insert(detail, at: 0) }
        if lines.isEmpty { lines = ["\(code)"] }
        return lines.joined(separator: "\n")
    }
}
