/// A route pattern such as `/v1/cards/{cardId}/apple-pay/provision`, split into segments once.
///
/// Matching compares segments, never a regular expression, so a request costs one split of
/// its path and a few string comparisons per candidate route.
struct RoutePattern: Sendable, Equatable {
    /// One `/`-separated piece of a pattern.
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    /// The pattern as written, used as the `route` of matched requests and as a metric label.
    let text: String
    let segments: [Segment]

    /// Parses a pattern, or says what is wrong with it.
    ///
    /// Patterns are written by developers at start-up, not received from callers; an invalid
    /// one is a programming error that ``Router/add(_:_:_:)`` stops on.
    static func parse(_ text: String) -> Result<RoutePattern, PatternError> {
        guard text.hasPrefix("/") else { return .failure(PatternError("route pattern must start with '/': \(text)")) }
        var segments: [Segment] = []
        var names: Set<String> = []
        for piece in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            if piece.hasPrefix("{") || piece.hasSuffix("}") {
                let name = String(piece.dropFirst().dropLast())
                guard piece.hasPrefix("{"), piece.hasSuffix("}"), !name.isEmpty,
                    name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
                else { return .failure(PatternError("malformed parameter segment '\(piece)' in \(text)")) }
                guard names.insert(name).inserted else {
                    return .failure(PatternError("parameter '\(name)' repeated in \(text)"))
                }
                segments.append(.parameter(name))
            } else {
                guard !piece.contains("{"), !piece.contains("}") else {
                    return .failure(PatternError("braces inside a literal segment '\(piece)' in \(text)"))
                }
                segments.append(.literal(String(piece)))
            }
        }
        return .success(RoutePattern(text: text, segments: segments))
    }

    /// The parameter values when `path` (already split after its leading `/`) fits this pattern.
    ///
    /// Every segment is checked before the parameters are built: most candidate routes of the
    /// path's length fail on a literal, and build nothing.
    func match(_ pathSegments: [Substring]) -> [String: String]? {
        guard pathSegments.count == segments.count else { return nil }
        for (segment, piece) in zip(segments, pathSegments) {
            switch segment {
            case .literal(let literal):
                guard piece == literal else { return nil }
            case .parameter:
                guard !piece.isEmpty else { return nil }
            }
        }
        var parameters: [String: String] = [:]
        for (segment, piece) in zip(segments, pathSegments) {
            if case .parameter(let name) = segment { parameters[name] = String(piece) }
        }
        return parameters
    }

    /// Two patterns with the same shape match exactly the same paths.
    func hasSameShape(as other: RoutePattern) -> Bool {
        guard segments.count == other.segments.count else { return false }
        return zip(segments, other.segments).allSatisfy { lhs, rhs in
            switch (lhs, rhs) {
            case (.literal(let a), .literal(let b)): a == b
            case (.parameter, .parameter): true
            default: false
            }
        }
    }

    /// Whether this pattern should win over `other` when both match a path: the first segment
    /// where they differ is a literal here and a parameter there (`/codes/verify` beats `/codes/{id}`).
    func isMoreSpecific(than other: RoutePattern) -> Bool {
        for (lhs, rhs) in zip(segments, other.segments) {
            switch (lhs, rhs) {
            case (.literal, .parameter): return true
            case (.parameter, .literal): return false
            default: continue
            }
        }
        return false
    }

    /// Why a route pattern was rejected.
    struct PatternError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
