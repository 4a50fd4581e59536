/// Bounds on the size of a ruleset's expressions, so that no file, however hostile or
/// mistaken, can exhaust the stack, the memory or every request's time.
///
/// A *term* is one value or one operator, as the parser reads it: an attribute, a literal, a
/// function call, a list, each list item, and each `or`, `and`, `not`, comparison, `in`,
/// `not in`, `+`, `-`, `*`, `/` and unary `-`. Parentheses and commas are not terms.
/// `wallet.device_score <= 2` is three terms; the longest condition in `rules/` is 17.
public enum RulesetLimits {
    /// The most terms in one rule condition (and in one `given` key or value of an example).
    public static let conditionTerms = 1_000
    /// The most terms in all the conditions of one `.rules` file.
    public static let fileTerms = 10_000
    /// The most terms in all the conditions of a ruleset, every `.rules` file together.
    public static let rulesetTerms = 50_000
    /// The most distinct velocity values (function, key and window) a ruleset may read: each
    /// one is counted per request and stored in every attempt's features.
    public static let velocityQueries = 100
}
