import Foundation
import IssuerdRisk

/// Compiles rules given as text (one `test.rules` file) plus optional lists.
func compileRules(
    _ rules: String, lists: [String: String] = [:], file: String = "test.rules"
) throws(RulesetError) -> Ruleset {
    var files = [RulesetFile(path: file, contents: rules)]
    for (name, text) in lists { files.append(RulesetFile(path: "lists/\(name).list", contents: text)) }
    return try RulesetCompiler.compile(files, contentHasher: RulesetContent.fnv1a64)
}

/// The diagnostics compiling `rules` produces (empty if it compiles).
func diagnostics(_ rules: String, lists: [String: String] = [:]) -> [RuleDiagnostic] {
    do {
        _ = try compileRules(rules, lists: lists)
        return []
    } catch {
        return error.diagnostics
    }
}

/// A rule block with the given fields; without stepup or mode the condition starts at
/// line 6, column 8 (stepup and mode lines come before it).
func rule(
    _ id: String = "r1", outcome: String = "yellow", stepUp: String? = nil, mode: String? = nil, when condition: String
) -> String {
    var text = "rule \(id)\n  title \"t\"\n  outcome \(outcome)\n  reason R\n  owner o\n"
    if let stepUp { text += "  stepup \(stepUp)\n" }
    if let mode { text += "  mode \(mode)\n" }
    return text + "  when \(condition)\nend\n"
}

/// An input with a known card and wallet (so the invariants do not interfere).
func cleanInput() -> RiskInput {
    var input = RiskInput()
    input.cardStatus = .active
    input.walletRecommendation = .approve
    return input
}

/// The repository's root, found from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
