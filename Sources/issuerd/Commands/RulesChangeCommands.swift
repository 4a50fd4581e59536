import Foundation
import IssuerdAPI
import IssuerdPostgres
import IssuerdRisk

/// `issuerd rules propose`, `approve` and `reject`: maker-checker from the command line, on the
/// PostgreSQL every instance reads (`ISSUERD_DATABASE_URL`). Instances serving with
/// `ISSUERD_RULES_APPROVAL=required` swap to an approved change within a second.
enum RulesChangeCommands {
    static let proposeUsage = """
        issuerd rules propose [DIR] [--by NAME]

        Compiles DIR (default ./rules), runs its examples, and records it as a proposed change (needs
        ISSUERD_DATABASE_URL): it does not serve until another person approves it. Prints the change
        id and the rule-level diff against the serving version. A version whose examples fail is not
        proposed (exit 1). Who proposes: --by, else ISSUERD_RULES_AUTHOR, else the git commit's
        author of DIR, else $USER. A newer proposal supersedes an open one.
        """

    static let decideUsage = """
        issuerd rules approve CHANGE_ID [--by NAME] [--note TEXT]
        issuerd rules reject CHANGE_ID [--by NAME] [--note TEXT]

        Approves (every instance then serves it) or rejects a proposed change (needs
        ISSUERD_DATABASE_URL). The person who proposed a change cannot approve it. Who decides:
        --by, else ISSUERD_RULES_AUTHOR, else $USER. Exit 1 when the change is not proposed or
        the approver proposed it.
        """

    static func propose(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["by"])
        if arguments.wantsHelp {
            print(proposeUsage)
            return 0
        }
        guard arguments.positionals.count <= 1 else { throw UsageError("expected at most one DIR") }
        let directory = arguments.positionals.first ?? "rules"
        let loader = RulesetLoader(path: directory, contentHasher: RulesetVersioning.sha256)
        let tested: TestedRuleset
        do {
            tested = try loader.loadTested()
        } catch {
            print(error.description)
            print("\(directory): not proposed (\(error.code))")
            return 1
        }
        let git = RulesGitCommit.read(directory: loader.directory)
        let person = try who(arguments, fallback: git?.author)
        let pool = try RulesHistoryCommands.openDatabase()
        defer { pool.close() }
        let change = try RulesHistoryCommands.databaseCall {
            try pool.withConnection { connection -> RuleChangeStore.Change? in
                var previous: Ruleset?
                if let serving = try RuleChangeStore.serving(connection: connection) {
                    let files = try RuleChangeStore.files(of: serving.changeID, connection: connection)
                    previous = try? RulesetCompiler.compile(files, contentHasher: RulesetVersioning.sha256)
                }
                if previous?.version == tested.ruleset.version {
                    print("\(directory): version \(tested.ruleset.version) is already serving; nothing proposed")
                    return nil
                }
                return try RuleChangeStore.propose(
                    tested, previous: previous, by: person, actor: "cli:\(person)", gitCommit: git?.commit,
                    trigger: "cli", at: Date(), connection: connection)
            }
        }
        guard let change else { return 0 }
        print("proposed change \(change.changeId.uuidString.lowercased()) by \(person)")
        print("version \(change.version) (serving \(change.previousVersion ?? "none recorded"))")
        if let commit = change.gitCommit { print("git commit \(commit)") }
        print("examples: \(change.tests.passed) passed, 0 failed")
        for line in diffLines(change.diff) { print(line) }
        return 0
    }

    static func decide(_ words: [String], approve: Bool) throws -> Int32 {
        let arguments = try Arguments(words, options: ["by", "note"])
        if arguments.wantsHelp {
            print(decideUsage)
            return 0
        }
        guard arguments.positionals.count == 1, let id = UUID(uuidString: arguments.positionals[0]) else {
            throw UsageError("expected one CHANGE_ID (a UUID, as `issuerd rules propose` printed it)")
        }
        let person = try who(arguments, fallback: nil)
        let pool = try RulesHistoryCommands.openDatabase()
        defer { pool.close() }
        do {
            let change = try RulesHistoryCommands.databaseCall {
                try pool.withConnection { connection in
                    try RuleChangeStore.decide(
                        id, approve: approve, by: person, actor: "cli:\(person)", note: arguments.option("note"),
                        at: Date(), connection: connection)
                }
            }
            print("\(change.status) change \(id.uuidString.lowercased()) (version \(change.version)) by \(person)")
            return 0
        } catch let error as RuleChangeStore.DecisionError {
            switch error {
            case .notFound: print("no rule change has the id \(id.uuidString.lowercased())")
            case .notProposed(let status): print("the change is \(status); only a proposed change can be decided")
            case .selfApproval: print("\(person) proposed this change; someone else must approve it")
            }
            return 1
        }
    }

    /// `+ rule`, `- rule`, `~ rule` lines with the rule's before and after.
    static func diffLines(_ diff: [RuleChange]) -> [String] {
        if diff.isEmpty { return ["no rule changes (lists or examples only)"] }
        return diff.flatMap { change -> [String] in
            let mark = change.change == .added ? "+" : change.change == .removed ? "-" : "~"
            var lines = ["\(mark) \(change.ruleId) (\(change.change.rawValue))"]
            if let before = change.before { lines.append("    before: \(before)") }
            if let after = change.after { lines.append("    after:  \(after)") }
            return lines
        }
    }

    private static func who(_ arguments: Arguments, fallback: String?) throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let name =
            arguments.option("by") ?? environment["ISSUERD_RULES_AUTHOR"] ?? fallback ?? environment["USER"]
        guard let name, !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 200 else {
            throw UsageError("say who you are with --by NAME (or ISSUERD_RULES_AUTHOR)")
        }
        return name
    }
}
