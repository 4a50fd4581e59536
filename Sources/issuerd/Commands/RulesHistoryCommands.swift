import Foundation
import IssuerdAPI
import IssuerdCore
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk

/// `issuerd rules export` and `issuerd rules explain`: the analyst tools that read stored
/// history from PostgreSQL (`ISSUERD_DATABASE_URL`).
enum RulesHistoryCommands {
    static let exportUsage = """
        issuerd rules export --since TIME --until TIME [--rules DIR | --lookback SECONDS] > FILE.jsonl

        Writes the attempts of [since, until) from PostgreSQL (ISSUERD_DATABASE_URL) as the JSON Lines
        that `issuerd rules backtest --input` reads, with the history before --since that velocity
        needs (attempts marked "replay": false, one-time-code failures, failed step-ups, token
        deletions). How far back: the longest velocity window of DIR (default ./rules), or
        --lookback SECONDS. TIME is RFC 3339, e.g. 2025-03-01T00:00:00Z. Progress goes to standard error.
        """

    /// How much history before an export's start velocity needs: `--lookback SECONDS` (0 to 400
    /// days), or else the longest velocity window of the rules in `--rules` (default `defaultRules`).
    static func lookback(_ arguments: Arguments, defaultRules: String) throws -> Int {
        guard let text = arguments.option("lookback") else {
            return HistoryExport.lookback(for: [try loadRules(arguments.option("rules") ?? defaultRules)])
        }
        guard let seconds = Int(text), (0...(400 * 86_400)).contains(seconds) else {
            throw UsageError("--lookback takes whole seconds from 0 to 34560000 (400 days)")
        }
        return seconds
    }

    static func export(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["since", "until", "rules", "lookback"])
        if arguments.wantsHelp {
            print(exportUsage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        let (since, until) = try window(arguments)
        let lookback = try lookback(arguments, defaultRules: "rules")
        let export = HistoryExport(since: since, until: until, lookbackSeconds: lookback)
        let pool = try openDatabase(forReading: true)
        defer { pool.close() }
        let output = FileHandle.standardOutput
        let written = try databaseCall {
            try pool.transaction(isolation: .repeatableRead) { connection in
                standardError(
                    "export: \(try export.attemptCount(connection: connection)) attempts in the window, "
                        + "history from \(HistoryExport.timestamp(export.historyStart))")
                return try write(export, connection: connection, to: output, label: "export")
            }
        }
        standardError("export: done, \(written) lines")
        return 0
    }

    /// Writes `export`'s lines to `output` a buffer at a time, reporting every 50,000 lines on
    /// standard error as `label: N lines`; returns the number of lines.
    static func write(
        _ export: HistoryExport, connection: PostgresConnection, to output: FileHandle, label: String
    ) throws -> Int {
        var buffer = ""
        var reported = 0
        let count = try export.write(
            connection: connection,
            progress: { lines in
                guard lines - reported >= 50_000 else { return }
                reported = lines
                standardError("\(label): \(lines) lines")
            },
            line: { line in
                buffer += line
                buffer += "\n"
                if buffer.utf8.count >= 1 << 16 {
                    output.write(Data(buffer.utf8))
                    buffer = ""
                }
            })
        output.write(Data(buffer.utf8))
        return count
    }

    static let explainUsage = """
        issuerd rules explain ATTEMPT_ID [--rules DIR]

        Prints a stored decision from PostgreSQL (ISSUERD_DATABASE_URL): its inputs, velocity features,
        every hit with the values it read, unknowns, the request's checks, flow and ruleset version.
        Then re-runs it with the rules in DIR (default ./rules), velocity and checks as stored (the
        live path's decision function), and says whether the outcome would differ today. Exit 1
        for an unknown attempt id.
        """

    static func explain(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["rules"])
        if arguments.wantsHelp {
            print(explainUsage)
            return 0
        }
        guard arguments.positionals.count == 1, let text = arguments.positionals.first else {
            throw UsageError("rules explain takes one ATTEMPT_ID")
        }
        guard let id = UUID(uuidString: text) else {
            throw CommandFailure(
                "attempt \(text.prefix(64)): not an attempt id (a UUID such as 1b4e28ba-2fa1-11d2-883f-0016d3cca427)")
        }
        let directory = arguments.option("rules") ?? "rules"
        let ruleset = try loadRules(directory)
        let pool = try openDatabase(forReading: true)
        defer { pool.close() }
        guard
            let attempt = try databaseCall({
                try pool.withConnection { try StoredAttempt.load(id: id, connection: $0) }
            })
        else {
            throw CommandFailure("attempt \(id.lowercasedString): no such attempt")
        }
        print(render(attempt))
        let replay: StoredAttempt.Replay
        do {
            replay = try attempt.replay(with: ruleset)
        } catch {
            throw CommandFailure("attempt \(id.lowercasedString): the stored inputs cannot be re-run: \(error)")
        }
        print("")
        print("re-run with \(directory) (\(ruleset.version)), velocity as stored:")
        print(
            "  flow:     \(replay.decision.flow)"
                + (replay.decision.flow == .yellow ? " stepup \(replay.decision.stepUpMethods)" : ""))
        for hit in replay.decision.hits { print("  hit       \(hit)") }
        for hit in replay.decision.unresolved { print("  unresolved \(hit)") }
        if !replay.missingFeatures.isEmpty {
            print("  not stored (re-run as unknown): " + replay.missingFeatures.joined(separator: ", "))
        }
        print(
            replay.differs
                ? "DIFFERS: stored \(attempt.flow), today \(replay.decision.flow)"
                : "same outcome: \(attempt.flow)"
                    + (attempt.rulesetVersion == ruleset.version ? " (same ruleset version)" : ""))
        return 0
    }

    static func render(_ attempt: StoredAttempt) -> String {
        var lines = [
            "attempt  \(attempt.id.lowercasedString)",
            "time     \(HistoryExport.timestamp(attempt.time))   channel \(attempt.channel)",
            "subject  card \(attempt.subject.cardID ?? "-")  device \(attempt.subject.deviceID ?? "-")  customer \(attempt.subject.customerID ?? "-")",
            "ruleset  \(attempt.rulesetVersion)",
            "flow     \(attempt.flow)   decision \(attempt.decision)"
                + (attempt.allowedMethods.isEmpty
                    ? "" : "   stepup [\(attempt.allowedMethods.joined(separator: ", "))]"),
            "inputs   \(attempt.inputsJSON)",
            "features \(attempt.featuresJSON)",
            "unknowns \(attempt.unknownsJSON)",
            "checks   \(attempt.checks == .none ? "none beside the rules" : attempt.checks.jsonText)",
            "hits:",
        ]
        lines += jsonArrayElements(attempt.hitsJSON).map { "  \($0)" }
        return lines.joined(separator: "\n")
    }

    /// One line per element of a JSON array (the stored hits), or the text itself.
    private static func jsonArrayElements(_ json: String) -> [String] {
        guard
            let array = try? JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed]) as? [Any]
        else {
            return [json]
        }
        if array.isEmpty { return ["(none)"] }
        return array.map { element in
            guard
                let data = try? JSONSerialization.data(
                    withJSONObject: element, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
            else { return "\(element)" }
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// `--since` and `--until`, both required, RFC 3339, since before until.
    static func window(_ arguments: Arguments) throws -> (since: Date, until: Date) {
        let sinceText = try arguments.required("since")
        let untilText = try arguments.required("until")
        guard let since = RFC3339.date(sinceText) else {
            throw UsageError("--since must be RFC 3339, e.g. 2025-03-01T00:00:00Z")
        }
        guard let until = RFC3339.date(untilText) else {
            throw UsageError("--until must be RFC 3339, e.g. 2025-03-08T00:00:00Z")
        }
        guard since < until else { throw UsageError("--since must be before --until") }
        return (since, until)
    }

    static func loadRules(_ directory: String) throws -> Ruleset {
        do {
            return try RulesetLoader(path: directory, contentHasher: RulesCommand.contentHasher).load()
        } catch {
            throw CommandFailure("the rules in \(directory) do not check:\n\(error.description)")
        }
    }

    /// Whether the analysts' reads go to `ISSUERD_READ_DATABASE_URL` (it is set).
    static var readsOnReplica: Bool {
        !(ProcessInfo.processInfo.environment["ISSUERD_READ_DATABASE_URL"] ?? "").isEmpty
    }

    /// A pool on `ISSUERD_DATABASE_URL`; for an analyst's read (`forReading`), on
    /// `ISSUERD_READ_DATABASE_URL` (a replica) when that is set.
    static func openDatabase(forReading: Bool = false) throws -> PostgresPool {
        let environment = ProcessInfo.processInfo.environment
        if forReading, let replica = environment["ISSUERD_READ_DATABASE_URL"], !replica.isEmpty {
            let logger = Logger(label: "issuerd.rules", minimumLevel: .warning, handler: JSONLogHandler.standardError)
            return PostgresPool(
                configuration: PostgresPoolConfiguration(connectionString: replica, size: 3), logger: logger)
        }
        guard let url = environment["ISSUERD_DATABASE_URL"], !url.isEmpty else {
            throw CommandFailure(
                "ISSUERD_DATABASE_URL is not set (a libpq URI such as postgresql://issuerd@localhost/issuerd)")
        }
        let logger = Logger(label: "issuerd.rules", minimumLevel: .warning, handler: JSONLogHandler.standardError)
        // A backtest reads its window on a second connection in the same snapshot, which the
        // pool lends only while one more stays free (opened lazily: two are used).
        return PostgresPool(configuration: PostgresPoolConfiguration(connectionString: url, size: 3), logger: logger)
    }

    /// Turns a database error into one clear line.
    static func databaseCall<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PostgresError {
            throw CommandFailure("database: " + error.message + (error.sqlState.map { " (SQLSTATE \($0))" } ?? ""))
        }
    }
}
