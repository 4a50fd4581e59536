/// What one rule's change between two versions is: the rule-level diff an approver reads and
/// the audit log keeps.
public struct RuleChange: Sendable, Hashable, Codable {
    /// `added`, `removed` or `changed`.
    public enum Kind: String, Sendable, Hashable, Codable {
        case added, removed, changed
    }

    /// The rule id.
    public var ruleId: String
    /// What happened to it.
    public var change: Kind
    /// The rule before (``RulesetDiff/summary(of:)``); nil when added.
    public var before: String?
    /// The rule after; nil when removed.
    public var after: String?

    /// A change.
    public init(ruleId: String, change: Kind, before: String?, after: String?) {
        self.ruleId = ruleId
        self.change = change
        self.before = before
        self.after = after
    }
}

/// The rule-level diff between two rulesets.
///
/// Rules are matched by id. A rule is `changed` when anything that decides or explains changes
/// (title, outcome, reason, step-up restriction, owner, mode, condition); moving it to another
/// line or file is not a change.
public enum RulesetDiff {
    /// The changes from `old` to `new`, sorted by rule id; every rule of `new` is `added` when
    /// `old` is nil.
    public static func between(_ old: Ruleset?, _ new: Ruleset) -> [RuleChange] {
        let before = Dictionary((old?.rules ?? []).map { ($0.id, summary(of: $0)) }, uniquingKeysWith: { a, _ in a })
        let after = Dictionary(new.rules.map { ($0.id, summary(of: $0)) }, uniquingKeysWith: { a, _ in a })
        var changes: [RuleChange] = []
        for id in Set(before.keys).union(after.keys).sorted() {
            switch (before[id], after[id]) {
            case (nil, let added?): changes.append(RuleChange(ruleId: id, change: .added, before: nil, after: added))
            case (let removed?, nil):
                changes.append(RuleChange(ruleId: id, change: .removed, before: removed, after: nil))
            case (let was?, let now?) where was != now:
                changes.append(RuleChange(ruleId: id, change: .changed, before: was, after: now))
            default: break
            }
        }
        return changes
    }

    /// One line holding everything of a rule but its position, in the words of its file:
    /// `outcome yellow; mode live; reason R; owner fraud; stepup [app]; title "…"; when …`.
    public static func summary(of rule: Rule) -> String {
        var parts = [
            "outcome \(rule.outcome)", "mode \(rule.mode.rawValue)", "reason \(rule.reason)", "owner \(rule.owner)",
        ]
        if let stepUp = rule.stepUp { parts.append("stepup \(stepUp)") }
        parts.append("title \"\(rule.title)\"")
        parts.append("when \(rule.conditionText)")
        return parts.joined(separator: "; ")
    }
}
