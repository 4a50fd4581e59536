/// Reads one typed value from the input record and the request's velocity values.
///
/// nil is *unknown*. These closures are the whole run-time form of a rule: no parsing, no
/// dictionary look-up and no allocation happens while they run.
typealias Reader<Value> = @Sendable (RiskInput, [Int?]) -> Value?

/// A type-checked expression and its run-time form.
struct CompiledExpression: Sendable {
    enum Node: Sendable {
        case bool(Reader<Bool>)
        /// Numbers and durations (seconds); ``type`` tells them apart.
        case number(Reader<Double>)
        case string(Reader<String>)
        /// The value's index in its domain.
        case enumeration(Reader<UInt8>)
        case stringSet(Reader<[String]>)
        /// A list literal or `@list`: only valid right of `in` or as a `has_any` argument.
        case set(SetOperand)
        /// A velocity key word (`card`, `device`, `customer`), only valid inside a velocity call.
        case velocityKey(VelocityKey)
    }

    var type: RiskType?
    var node: Node
    /// The literal value, when the expression is one: lets comparisons specialise on it.
    var constant: RiskValue?
    var location: SourceLocation

    /// A reader that says whether the value is known, whatever its type.
    var knownReader: Reader<Bool>? {
        switch node {
        case .bool(let read): { input, velocity in read(input, velocity) != nil }
        case .number(let read): { input, velocity in read(input, velocity) != nil }
        case .string(let read): { input, velocity in read(input, velocity) != nil }
        case .enumeration(let read): { input, velocity in read(input, velocity) != nil }
        case .stringSet(let read): { input, velocity in read(input, velocity) != nil }
        case .set, .velocityKey: nil
        }
    }

    /// The value as a string reader (enumerations by name), for mixed comparisons.
    var stringReader: Reader<String>? {
        switch node {
        case .string(let read): return read
        case .enumeration(let read):
            guard case .enumeration(let domain) = type else { return nil }
            let names = domain.names
            return { input, velocity in read(input, velocity).map { names[Int($0)] } }
        default: return nil
        }
    }
}

/// The right-hand side of `in`: literal items or a named list, with their positions.
struct SetOperand: Sendable {
    /// `[…]` items or the `@list`'s values.
    var strings: Set<String> = []
    var numbers: Set<Double> = []
    /// The element type; nil for an empty literal list.
    var elementType: RiskType?
    /// Each literal item's position, for domain errors; empty for `@lists`.
    var itemLocations: [String: SourceLocation] = [:]
    /// The `@list` name, when the operand is a list file.
    var listName: String?
}

/// A value a rule read, captured for the decision's explanation.
struct ValueRead: Sendable {
    /// The attribute or velocity call as written, e.g. `attempts(card, 24h)`.
    var name: String
    var read: @Sendable (RiskInput, [Int?]) -> RiskValue
}
