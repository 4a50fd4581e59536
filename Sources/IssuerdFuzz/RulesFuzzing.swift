import IssuerdRisk

/// The rule language: lexer, parser and compiler of `.rules`, `.list` and `.cases` files, then
/// the compiled conditions run once.
///
/// An input is one ruleset directory: text up to the first line `%% <path>` is `fuzz.rules`,
/// and each such line starts another file at that path (`lists/x.list`, `examples/x.cases`, a
/// second `.rules` file). Bytes that are not UTF-8 are what the loader refuses before parsing,
/// so they end the run.
enum RulesFuzzing {
    static let fileMarker = "%% "

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        guard let text = String(validating: bytes, as: UTF8.self) else { return }
        let files = Self.files(text)
        let ruleset: Ruleset
        do {
            ruleset = try RulesetCompiler.compile(files, contentHasher: RulesetContent.fnv1a64)
        } catch {
            try checkRefusal(error, files: files)
            return
        }
        // The compiled closures once with nothing known and once with every velocity value, so
        // that comparisons, `in`, arithmetic and the unknowns' paths all run.
        let count = ruleset.velocityQueries.count
        _ = ruleset.evaluate(RiskInput(), velocity: [Int?](repeating: nil, count: count))
        _ = ruleset.evaluate(RiskInput(), velocity: (0..<count).map { $0 % 3 == 0 ? Int.max : $0 })
        guard files.contains(where: { $0.path.hasSuffix(".cases") }) else { return }
        do {
            _ = try ExampleSuite.run(files, against: ruleset)
        } catch {
            try checkRefusal(error, files: files)
        }
    }

    /// A refused ruleset says where: at least one diagnostic, each in one of its files (or at
    /// the directory itself, `.`, for an empty one), at a line and column from 1.
    private static func checkRefusal(_ error: RulesetError, files: [RulesetFile]) throws(FuzzFailure) {
        guard !error.diagnostics.isEmpty else { throw FuzzFailure("refused with no diagnostic: \(error)") }
        let paths = Set(files.map(\.path)).union(["."])
        for diagnostic in error.diagnostics {
            let location = diagnostic.location
            guard paths.contains(location.file), location.line >= 1, location.column >= 1 else {
                throw FuzzFailure("diagnostic at \(location), outside the input's files: \(diagnostic)")
            }
        }
    }

    /// The files of one input (see the type's description).
    static func files(_ text: String) -> [RulesetFile] {
        var files: [RulesetFile] = []
        var path = "fuzz.rules"
        var lines: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(fileMarker) {
                files.append(RulesetFile(path: path, contents: lines.joined(separator: "\n")))
                path = String(line.dropFirst(fileMarker.count))
                lines = []
            } else {
                lines.append(line)
            }
        }
        files.append(RulesetFile(path: path, contents: lines.joined(separator: "\n")))
        // Two files at one path cannot come from a directory: the last one wins, as it would
        // have overwritten the first.
        var byPath: [String: RulesetFile] = [:]
        for file in files { byPath[file.path] = file }
        return byPath.values.sorted { $0.path < $1.path }
    }
}
