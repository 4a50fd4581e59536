/// The static type of an expression in the rule language.
///
/// Types are checked when a ruleset compiles, so a rule comparing a score with a string, or a
/// duration with a bare number, never reaches the engine.
public enum RiskType: Equatable, Sendable, CustomStringConvertible {
    /// true or false.
    case bool
    /// A real number.
    case number
    /// Free text.
    case string
    /// Seconds, written `30m`, `24h`, `14d` in rules.
    case duration
    /// A string from a closed domain, compared as an integer at run time.
    case enumeration(EnumerationDomain)
    /// A set of strings (the wallet's reason codes).
    case stringSet

    public var description: String {
        switch self {
        case .bool: "bool"
        case .number: "number"
        case .string: "string"
        case .duration: "duration"
        case .enumeration(let domain):
            "\(domain.name) (one of \(domain.names.map { "\"\($0)\"" }.joined(separator: ", ")))"
        case .stringSet: "set of strings"
        }
    }

    /// True when values of `self` may be compared with `==` against `other`.
    func isComparable(with other: RiskType) -> Bool {
        switch (self, other) {
        case (.enumeration, .string), (.string, .enumeration): true
        case (.enumeration(let a), .enumeration(let b)): a == b
        default: self == other && self != .stringSet
        }
    }
}

/// The names an enumerated attribute may take.
public struct EnumerationDomain: Equatable, Sendable {
    /// The domain's name in messages, e.g. `card status`.
    public let name: String
    /// The names, in code order.
    public let names: [String]

    /// The domain of a ``RiskEnumeration`` type.
    init<E: RiskEnumeration>(_ name: String, _ type: E.Type) {
        self.name = name
        self.names = E.names
    }
}
