import Foundation
import IssuerdCore

/// Dispatches `issuerd <command> …` to the registered commands.
enum CommandLineTool {
    /// Every subcommand, in the order `issuerd --help` lists them.
    static let commands: [Command] = [
        Command(ServeCommand.self),
        Command(MigrateCommand.self),
        Command(DatabaseCommand.self),
        Command(AppleCommand.self),
        Command(DevCommand.self),
        Command(RulesCommand.self),
        Command(APIKeyCommand.self),
        Command(CardsCommand.self),
        Command(OutcomesCommand.self),
        Command(AuditCommand.self),
        Command(HistoryCommand.self),
        Command(KeysCommand.self),
        Command(DemoCommand.self),
        Command(HealthCommand.self),
    ]

    /// The version and commit this binary was built from (Plugins/BuildInfoPlugin).
    static let build = BuildInfo(version: GeneratedBuildInfo.version, commit: GeneratedBuildInfo.commit)

    static var usage: String {
        var text = """
            issuerd: Apple Pay in-app provisioning, add-card risk scoring and step-up verification.

            Usage: issuerd <command> [options]     (issuerd <command> --help for details)
                   issuerd --version

            Commands:

            """
        let width = (commands.map { $0.name.count }.max() ?? 0) + 2
        for command in commands {
            text += "  " + command.name.padding(toLength: width, withPad: " ", startingAt: 0) + command.summary + "\n"
        }
        text += "\nConfiguration comes from the environment (ISSUERD_*); see docs/configuration.md.\n"
        return text
    }

    /// Runs the command named by `argv[1]` and returns the exit status.
    static func main(_ argv: [String]) -> Int32 {
        let words = Array(argv.dropFirst())
        guard let name = words.first, name != "--help", name != "-h", name != "help" else {
            print(usage, terminator: "")
            return words.isEmpty ? 2 : 0
        }
        if name == "--version" {
            print("issuerd \(build.version) (commit \(build.commit))")
            return 0
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            let near = commands.map(\.name).filter { $0.hasPrefix(String(name.prefix(2))) }
            standardError(
                "issuerd: unknown command '\(name)'"
                    + (near.isEmpty ? "" : " (did you mean \(near.joined(separator: " or "))?)")
                    + "; see issuerd --help")
            return 2
        }
        do {
            return try command.run(Array(words.dropFirst()))
        } catch let error as UsageError {
            standardError("issuerd \(command.name): \(error.description)\n\nUsage:\n\(command.usage)")
            return 2
        } catch let failure as CommandFailure {
            standardError("issuerd \(command.name): \(failure.description)")
            return failure.status
        } catch {
            standardError("issuerd \(command.name): \(error)")
            return 1
        }
    }
}

/// Writes a line to standard error.
func standardError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
