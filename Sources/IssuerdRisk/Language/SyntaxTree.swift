/// An expression as written, before type checking.
struct Expression: Sendable {
    indirect enum Kind: Sendable {
        /// A bare dotted name: an attribute, or a velocity key inside a call.
        case name(String)
        case number(Double)
        case duration(Double)
        case string(String)
        case bool(Bool)
        /// `[a, b, c]`.
        case list([Expression])
        /// `@name`.
        case listReference(String)
        /// `function(arguments)`.
        case call(String, [Expression])
        case not(Expression)
        case negate(Expression)
        /// A comparison: comparisons do not chain (`a < b < c` is a syntax error).
        case binary(BinaryOperator, Expression, Expression)
        /// `a op b op c …`, left-associative, every operator of one precedence level (`or`;
        /// `and`; `+ -`; `* /`). Flat, so that no walk over a long chain recurses once per
        /// operator.
        case chain(Expression, [ChainLink])
        /// `value in set`, or `value not in set` when negated.
        case membership(Expression, Expression, negated: Bool)
    }

    var kind: Kind
    /// Where the expression (or its operator, for binary ones; its last operator, for a
    /// chain) starts.
    var location: SourceLocation
}

/// One `op operand` step of a chain.
struct ChainLink: Sendable {
    var op: BinaryOperator
    /// Where the operator is written.
    var location: SourceLocation
    var operand: Expression
}

/// Binary operators, loosest binding first in the grammar.
enum BinaryOperator: String, Sendable {
    case or, and
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

    var isComparison: Bool {
        switch self {
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual: true
        default: false
        }
    }
}

/// A located word, such as a step-up method in `stepup [app, email]`.
struct LocatedWord: Sendable {
    var text: String
    var location: SourceLocation
}

/// One `rule … end` block as written.
struct RuleDeclaration: Sendable {
    var id: LocatedWord
    var title: String?
    var outcome: LocatedWord?
    var reason: LocatedWord?
    var stepUp: [LocatedWord]?
    var stepUpLocation: SourceLocation?
    var owner: LocatedWord?
    var mode: LocatedWord?
    var condition: Expression?
    /// The `rule` keyword's position.
    var location: SourceLocation
}
