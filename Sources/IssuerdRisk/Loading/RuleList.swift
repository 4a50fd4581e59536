/// A typed list from a `.list` file beside the rules, loaded into a hash set.
///
/// ```
/// # comment lines start with '#'
/// type string
/// dev000200
/// dev000400
/// ```
public struct RuleList: Sendable {
    /// The element type of a list.
    public enum ElementType: String, Sendable {
        case string, number
    }

    /// The name rules write after `@`: the file name without `.list`.
    public let name: String
    /// The element type.
    public let type: ElementType
    /// The values of a string list.
    public let strings: Set<String>
    /// The values of a number list.
    public let numbers: Set<Double>
    /// Where the list is declared.
    public let location: SourceLocation

    /// The number of entries.
    public var count: Int { type == .string ? strings.count : numbers.count }

    /// The most entries a list may hold; a bound on memory for a mistaken file.
    public static let maximumEntries = 2_000_000

    /// Parses a list file.
    ///
    /// - Throws: A positioned diagnostic for a missing or unknown type line, or a value that
    ///   is not of the list's type.
    public static func parse(name: String, file: String, text: String) throws(RuleDiagnostic) -> RuleList {
        var type: ElementType?
        var strings = Set<String>()
        var numbers = Set<Double>()
        var typeLocation = SourceLocation(file: file, line: 1, column: 1)
        var lineNumber = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = rawLine.trimmingWhitespace()
            if line.isEmpty || line.hasPrefix("#") { continue }
            let indent = rawLine.prefix(while: { $0 == " " || $0 == "\t" }).count
            let location = SourceLocation(file: file, line: lineNumber, column: indent + 1)
            guard let elementType = type else {
                let words = line.split(separator: " ", omittingEmptySubsequences: true)
                guard words.count == 2, words[0] == "type" else {
                    throw RuleDiagnostic(
                        location, "a list file must start with its type", expected: "'type string' or 'type number'")
                }
                guard let declared = ElementType(rawValue: String(words[1])) else {
                    throw RuleDiagnostic(
                        location, "unknown list type '\(words[1])'", expected: "string or number",
                        suggestion: Suggestion.nearest(to: String(words[1]), in: ["string", "number"]))
                }
                type = declared
                typeLocation = location
                continue
            }
            switch elementType {
            case .string: strings.insert(String(line))
            case .number:
                guard let value = Double(line) else {
                    throw RuleDiagnostic(
                        location, "'\(line)' is not a number", expected: "one number per line in a 'type number' list")
                }
                numbers.insert(value)
            }
            if strings.count + numbers.count > maximumEntries {
                throw RuleDiagnostic(location, "list has more than \(maximumEntries) entries")
            }
        }
        guard let type else {
            throw RuleDiagnostic(
                SourceLocation(file: file, line: 1, column: 1), "list file is empty",
                expected: "'type string' or 'type number' then one value per line")
        }
        return RuleList(name: name, type: type, strings: strings, numbers: numbers, location: typeLocation)
    }
}

extension Substring {
    func trimmingWhitespace() -> Substring {
        var result = self
        while let first = result.first, first.isWhitespace { result.removeFirst() }
        while let last = result.last, last.isWhitespace { result.removeLast() }
        return result
    }
}
