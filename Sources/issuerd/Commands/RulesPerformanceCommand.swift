import Foundation
import IssuerdAPI
import IssuerdCore
import IssuerdHistory

/// `issuerd rules performance`: each rule's and check's figures against the recorded outcomes.
enum RulesPerformanceCommand {
    static let usage = """
        issuerd rules performance --since TIME --until TIME [--json] [--rules DIR]

        Reads the attempts of [since, until) and their current outcomes from PostgreSQL
        (ISSUERD_DATABASE_URL) and prints, per rule (live and shadow) and built-in check: hits,
        decisions it made (decided), fraud, legitimate and unlabelled among them, precision
        (fraud / labelled), recall (its fraud / all confirmed fraud of the period), missed fraud,
        amount lost on its fraud, and for yellow decisions the step-ups started, completed and
        abandoned. Then the totals: attempts, fraud, legitimate, fraud that passed green (and its
        amount) and label maturity, the share of attempts older than
        ISSUERD_OUTCOMES_LABEL_MATURITY (default 60d). The rules of DIR (default ./rules) are
        listed even without hits. --json prints the JSON of GET /v1/admin/rules/performance.
        TIME is RFC 3339, e.g. 2026-11-01T00:00:00Z.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["since", "until", "rules"], flags: ["json"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        let (since, until) = try RulesHistoryCommands.window(arguments)
        let ruleset = try RulesHistoryCommands.loadRules(arguments.option("rules") ?? "rules")
        let settings = try OperatorCommandSupport.setting {
            try OutcomeSettings(ConfigurationReader.layered(file: nil))
        }
        let pool = try RulesHistoryCommands.openDatabase(forReading: true)
        defer { pool.close() }
        // The roll-ups it reads are written on the primary when it reads on a replica.
        let primary = RulesHistoryCommands.readsOnReplica ? try RulesHistoryCommands.openDatabase() : nil
        defer { primary?.close() }
        let performance = try RulesHistoryCommands.databaseCall {
            try pool.withConnection { connection in
                try RulePerformance.read(
                    since: since, until: until, ruleset: ruleset, maturity: settings.labelMaturity,
                    stepUpWait: settings.reviewStepUpWait, now: Date(), connection: connection, rollUp: primary)
            }
        }
        if arguments.flag("json") {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            print(String(decoding: try encoder.encode(performance), as: UTF8.self))
        } else {
            print(RulePerformanceText.render(performance), terminator: "")
        }
        return 0
    }
}
