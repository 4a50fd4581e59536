/// One `issuerd` subcommand (or a group of them, such as `rules`), defined as a caseless enum.
///
/// Every command answers `--help` with its usage and exits 0; a usage mistake prints one line
/// naming the problem and exits 2; a failure of the work itself exits 1.
protocol CommandDefinition: SendableMetatype {
    /// The word after `issuerd`, e.g. `serve`.
    static var name: String { get }
    /// One line for the `issuerd --help` table.
    static var summary: String { get }
    /// The full `--help` text.
    static var usage: String { get }
    /// Runs the command with the words after its name.
    ///
    /// Parse them with ``Arguments/init(_:options:flags:)`` and print ``usage`` on `--help`.
    /// - Returns: The process exit status.
    static func run(_ words: [String]) throws -> Int32
}

/// A usage mistake: printed as one line with the command's name, exit status 2.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A failure that is explained by its message alone, exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    var status: Int32
    init(_ description: String, status: Int32 = 1) {
        self.description = description
        self.status = status
    }
}

/// A registered command: the definition's members captured as values.
///
/// Registration goes through this struct rather than an array of existential metatypes
/// (`[any CommandDefinition.Type]`), which crashes the Swift 6.3 compiler in SILGen.
struct Command: Sendable {
    let name: String
    let summary: String
    let usage: String
    let run: @Sendable ([String]) throws -> Int32

    init<Definition: CommandDefinition>(_ definition: Definition.Type) {
        name = Definition.name
        summary = Definition.summary
        usage = Definition.usage
        run = { try Definition.run($0) }
    }
}

/// Exit statuses beyond 0, 1 and 2, from BSD's `sysexits.h`, so that a supervisor can tell a
/// failure a restart may fix from one it cannot (systemd's `RestartPreventExitStatus=78`).
enum ExitStatus {
    /// `EX_CONFIG`: a wrong or missing setting; restarting repeats it (and a wrong HSM PIN,
    /// retried, locks the token).
    static let configuration: Int32 = 78
    /// `EX_UNAVAILABLE`: a service issuerd needs (PostgreSQL) is unavailable at start.
    static let unavailable: Int32 = 69
}

extension CommandDefinition {
    /// Runs the subcommand that `words` starts with, from `table`; see ``Subcommand/run(_:usage:_:)``.
    static func runSubcommand(
        _ words: [String], _ table: KeyValuePairs<String, ([String]) throws -> Int32>
    ) throws -> Int32 {
        try Subcommand.run(words, usage: usage, table)
    }
}

/// The dispatch every command with subcommands shares.
enum Subcommand {
    /// Runs the subcommand that `words` starts with, from `table` (name → what runs it with the
    /// words after the name). No words prints `usage` and gives 2; `--help` or `-h` prints it and
    /// gives 0; an unknown name is a usage error naming the likely ones, or else all of them.
    static func run(
        _ words: [String], usage: String, _ table: KeyValuePairs<String, ([String]) throws -> Int32>
    ) throws -> Int32 {
        guard let name = words.first, name != "--help", name != "-h" else {
            print(usage)
            return words.isEmpty ? 2 : 0
        }
        if let run = table.first(where: { $0.key == name })?.value { return try run(Array(words.dropFirst())) }
        let names = table.map(\.key)
        let near = names.filter { $0.hasPrefix(String(name.prefix(2))) }
        if !near.isEmpty {
            throw UsageError("unknown subcommand '\(name)' (did you mean \(near.joined(separator: " or "))?)")
        }
        throw UsageError("unknown subcommand '\(name)' (\(names.joined(separator: ", ")))")
    }
}
