/// Command-line arguments after the subcommand name: `--flag`, `--option value`,
/// `--option=value` and positionals, with every option checked against what the command knows.
struct Arguments {
    private(set) var positionals: [String] = []
    private var options: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// True when `--help` or `-h` was given.
    var wantsHelp: Bool { flags.contains("help") }

    /// Parses `raw`.
    ///
    /// - Parameters:
    ///   - raw: The words after the subcommand.
    ///   - options: Names (without `--`) that take a value.
    ///   - flags: Names that take none.
    /// - Throws: ``UsageError`` for an unknown option or an option without its value.
    init(_ raw: [String], options knownOptions: Set<String> = [], flags knownFlags: Set<String> = []) throws {
        var index = 0
        var onlyPositionals = false
        while index < raw.count {
            let word = raw[index]
            index += 1
            if onlyPositionals || !word.hasPrefix("-") || word == "-" {
                positionals.append(word)
                continue
            }
            if word == "--" {
                onlyPositionals = true
                continue
            }
            if word == "-h" || word == "--help" {
                flags.insert("help")
                continue
            }
            var name = String(word.drop(while: { $0 == "-" }))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if knownFlags.contains(name) {
                guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
            } else if knownOptions.contains(name) {
                if let inlineValue {
                    options[name, default: []].append(inlineValue)
                } else {
                    guard index < raw.count else { throw UsageError("--\(name) needs a value") }
                    options[name, default: []].append(raw[index])
                    index += 1
                }
            } else {
                let known = (knownOptions.union(knownFlags)).sorted().map { "--" + $0 }
                throw UsageError(
                    "unknown option --\(name)" + (known.isEmpty ? "" : " (known: \(known.joined(separator: ", ")))"))
            }
        }
    }

    /// The last value given for `--name`, if any.
    func option(_ name: String) -> String? { options[name]?.last }

    /// Every value given for a repeatable `--name`.
    func options(_ name: String) -> [String] { options[name] ?? [] }

    /// The value of `--name`, or a usage error naming it.
    func required(_ name: String) throws -> String {
        guard let value = option(name) else { throw UsageError("--\(name) is required") }
        return value
    }

    /// True when `--name` was given.
    func flag(_ name: String) -> Bool { flags.contains(name) }
}
