import Foundation
import IssuerdAPI
import IssuerdHistory
import IssuerdRisk

/// `issuerd rules …`: the analyst tools: check, test, backtest, explain.
enum RulesCommand: CommandDefinition {
    static let name = "rules"
    static let summary = "check, test and backtest the risk rules (analyst tools)"
    static let usage = """
        issuerd rules <subcommand> [options]     (issuerd rules <subcommand> --help for details)

        Subcommands:
          check [DIR]                  compile every rule and list; exit 1 with file:line:column errors
          test [DIR]                   run the example cases (*.cases); exit 1 on any failure
          backtest --candidate DIR     current versus candidate over a JSONL export or PostgreSQL history
          export --since T --until T   write PostgreSQL history as backtest JSONL (needs the database)
          explain ATTEMPT_ID           show a stored decision and re-run it with today's rules (needs the database)
          performance --since T --until T  each rule's precision, recall and step-ups against outcomes (needs the database)
          propose [DIR] [--by NAME]    record DIR as a change waiting for approval (needs the database)
          approve ID / reject ID       approve or reject a proposed change, as another person (needs the database)

        DIR defaults to ./rules. The language is documented in docs/rules.md.
        """

    /// The version hasher for local runs; the server wires SHA-256 from IssuerdCrypto.
    static let contentHasher: ContentHasher = RulesetVersioning.sha256

    static func run(_ words: [String]) throws -> Int32 {
        try runSubcommand(
            words,
            [
                "check": check, "test": test, "backtest": RulesBacktestCommand.run,
                "explain": RulesHistoryCommands.explain, "export": RulesHistoryCommands.export,
                "performance": RulesPerformanceCommand.run, "propose": RulesChangeCommands.propose,
                "approve": { try RulesChangeCommands.decide($0, approve: true) },
                "reject": { try RulesChangeCommands.decide($0, approve: false) },
            ])
    }

    static let checkUsage = """
        issuerd rules check [DIR]

        Compiles every *.rules and *.list file under DIR (default ./rules). Prints the rules, lists
        and velocity queries and exits 0, or prints every error as file:line:column with what was
        expected and a "did you mean" suggestion, and exits 1. Nothing is served from a ruleset
        that does not check. With ISSUERD_HISTORY_RETENTION set, a velocity window longer than the
        history kept for certain (28 days a month) is refused too, with the query named.
        """

    static func check(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words)
        if arguments.wantsHelp {
            print(checkUsage)
            return 0
        }
        let directory = try directoryArgument(arguments)
        let ruleset: Ruleset
        do {
            ruleset = try RulesetLoader(path: directory, contentHasher: contentHasher).load()
        } catch {
            print(error.description)
            print(
                "\(directory): \(error.diagnostics.count) error\(error.diagnostics.count == 1 ? "" : "s"); ruleset refused"
            )
            return 1
        }
        if let text = ProcessInfo.processInfo.environment["ISSUERD_HISTORY_RETENTION"], !text.isEmpty {
            guard let retention = HistoryRetention(text) else {
                throw UsageError(
                    "ISSUERD_HISTORY_RETENTION must be a number of months or years, e.g. 25months or 2years")
            }
            let refusals = retention.refusals(ruleset)
            if !refusals.isEmpty {
                for refusal in refusals { print("\(directory): \(refusal)") }
                print(
                    "\(directory): \(refusals.count) velocity window\(refusals.count == 1 ? "" : "s") past retention; ruleset refused"
                )
                return 1
            }
        }
        let live = ruleset.rules.filter { $0.mode == .live }.count
        print(
            "\(directory): OK, \(ruleset.rules.count) rules (\(live) live, \(ruleset.rules.count - live) shadow), "
                + "\(ruleset.listSizes.count) lists, \(ruleset.velocityQueries.count) velocity queries")
        print("version \(ruleset.version)")
        for rule in ruleset.rules {
            let stepUp = rule.stepUp.map { " stepup \($0)" } ?? ""
            print(
                "  \(rule.outcome.description.padding(toLength: 6, withPad: " ", startingAt: 0)) \(rule.mode == .shadow ? "shadow " : "")\(rule.id)\(stepUp)  (\(rule.location))"
            )
        }
        for (name, size) in ruleset.listSizes.sorted(by: { $0.key < $1.key }) {
            print("  list @\(name): \(size) entries")
        }
        for query in ruleset.velocityQueries {
            print("  velocity \(query)")
        }
        return 0
    }

    static let testUsage = """
        issuerd rules test [DIR]

        Runs every example in DIR/**/*.cases (default ./rules) and prints PASS or FAIL per example.
        Exits 1 if any example fails or if a rule is hit by no example (every rule needs one).
        """

    static func test(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words)
        if arguments.wantsHelp {
            print(testUsage)
            return 0
        }
        let directory = try directoryArgument(arguments)
        let loader = RulesetLoader(path: directory, contentHasher: contentHasher)
        let report: ExampleSuite.Report
        do {
            let files = try loader.files()
            report = try ExampleSuite.run(
                files, against: try RulesetCompiler.compile(files, contentHasher: contentHasher))
        } catch {
            print(error.description)
            return 1
        }
        for result in report.results {
            let example = result.example
            print("\(result.passed ? "PASS" : "FAIL") \(example.location)  \(example.name)")
            guard !result.passed else { continue }
            for failure in result.failures { print("       \(failure)") }
            print(
                "       decision: \(result.decision.flow) stepup \(result.decision.stepUpMethods); hits: "
                    + result.decision.hits.map(\.ruleID).joined(separator: ", "))
        }
        for rule in report.uncoveredRules {
            print("UNCOVERED rule \(rule): no example makes it hit")
        }
        let failed = report.results.filter { !$0.passed }.count
        print(
            "\(report.results.count - failed) passed, \(failed) failed, \(report.uncoveredRules.count) rules without an example"
        )
        return report.passed ? 0 : 1
    }

    private static func directoryArgument(_ arguments: Arguments) throws -> String {
        guard arguments.positionals.count <= 1 else { throw UsageError("expected at most one DIR") }
        return arguments.positionals.first ?? "rules"
    }
}
