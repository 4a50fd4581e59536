import Foundation
import IssuerdRisk

/// The details of the audit entries of rule changes (`rules.reloaded`, `rules.reload_failed`,
/// `rules.proposed`, `rules.approved`, `rules.rejected`): the person, both versions, the git
/// commit and the rule-level diff (as JSON text: audit details are strings, hashed as stored).
enum RulesAudit {
    static func details(
        person: String, previous: String?, version: String, gitCommit: String?, diff: [RuleChange], trigger: String
    ) -> [String: String] {
        var details = ["person": person, "version": version, "trigger": trigger, "diff": diffText(diff)]
        if let previous { details["previousVersion"] = previous }
        if let gitCommit { details["gitCommit"] = gitCommit }
        return details
    }

    /// `[{"after":…,"change":"added","ruleId":…}, …]` with sorted keys.
    static func diffText(_ diff: [RuleChange]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(diff)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }
}
