import Foundation
import IssuerdAPI
import IssuerdHistory
import IssuerdRisk

/// `issuerd rules backtest`: current versus candidate over stored attempts.
enum RulesBacktestCommand {
    static let usage = """
        issuerd rules backtest --candidate DIR [--current DIR] --input FILE.jsonl [--sample N] [--changed-csv FILE]
        issuerd rules backtest --candidate DIR [--current DIR] --since TIME --until TIME [--limit N] [--sample N]
                               [--changed-csv FILE]

        Replays every attempt of FILE.jsonl (or FILE.jsonl.gz, as `issuerd history archive` writes)
        through the current ruleset and the candidate, with
        velocity recomputed from the file's own history as of each attempt. The current ruleset
        is, unless --current names a directory, the one issuerd serves: with
        ISSUERD_RULES_APPROVAL=required the newest approved change (its files, from PostgreSQL);
        otherwise the directory of ISSUERD_RULES_DIR (default ./rules), as `issuerd serve` reads
        it. The first line says which versions are compared and where each came from.
        With --since/--until the attempts of [since, until) come from PostgreSQL (ISSUERD_DATABASE_URL),
        at most N (--limit, default 20000000), read in time order a slice at a time in one snapshot
        (memory stays bounded by a slice and the keys active within the rules' longest window, not
        by the window's length): a velocity value an attempt's decision recorded is used as
        recorded; the others are counted from the history of their cards, devices or customers
        within the query's window (before --since too). `issuerd rules export` writes
        all of the history as JSONL (the same report from --input wherever the recorded values
        are the history's; docs/rules.md, "History from PostgreSQL").
        Prints the flow mix before and after, per-rule hit counts, and a sample of the attempts
        whose flow changed (N, default 20). Progress goes to standard error. The JSONL format is
        in docs/rules.md ("Backtest input").

        --changed-csv FILE writes every attempt whose flow the candidate changes as CSV (mode 0600,
        written whole or not at all): attempt_id, time, channel, card_last_four, before, after, and
        the rules that made the difference (live hits under one ruleset only). A cell starting with
        = + - @ is prefixed with ', and no cell ever holds a full card number (from --input the
        last four are empty: the file has no cards).
        """

    static func run(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(
            words, options: ["candidate", "current", "input", "since", "until", "sample", "limit", "changed-csv"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        let candidateDirectory = try arguments.required("candidate")
        guard let sample = Int(arguments.option("sample") ?? "20"), (0...10_000).contains(sample) else {
            throw UsageError("--sample takes a number from 0 to 10000")
        }
        let csv = try arguments.option("changed-csv").map { try ChangedCSVFile(path: $0) }
        if arguments.option("since") != nil || arguments.option("until") != nil {
            guard arguments.option("input") == nil else {
                throw UsageError("give either --input or --since/--until, not both")
            }
            let (since, until) = try RulesHistoryCommands.window(arguments)
            guard let limit = Int(arguments.option("limit") ?? "20000000"), (1...50_000_000).contains(limit) else {
                throw UsageError("--limit takes a number from 1 to 50000000")
            }
            let (current, origin) = try currentRuleset(arguments)
            let candidate = try load(candidateDirectory, role: "candidate")
            print(comparing(current, from: origin, candidate, in: candidateDirectory))
            let pool = try RulesHistoryCommands.openDatabase(forReading: true)
            defer { pool.close() }
            let outcome = try RulesHistoryCommands.databaseCall {
                try HistoryBacktest.run(
                    current: current, candidate: candidate, since: since, until: until, limit: limit,
                    sampleSize: sample, database: pool, progress: standardError,
                    changed: csv.map { file in { rows in file.write(rows.map(\.csvLine)) } })
            }
            switch outcome {
            case .tooManyAttempts(let found, let limit):
                throw CommandFailure(
                    "the window holds \(found) attempts, more than --limit \(limit); narrow --since/--until or raise --limit"
                )
            case .report(let report, _):
                try csv?.finish(standardError)
                print(render(report, current: current, candidate: candidate))
                return 0
            }
        }
        let inputPath = try arguments.required("input")
        let (current, origin) = try currentRuleset(arguments)
        let candidate = try load(candidateDirectory, role: "candidate")
        print(comparing(current, from: origin, candidate, in: candidateDirectory))
        // An archive of `issuerd history archive` is read as it is, compressed.
        let contents =
            inputPath.hasSuffix(".gz")
            ? try HistoryCommand.tool("gzip", ["-dc", inputPath]) : FileManager.default.contents(atPath: inputPath)
        guard let data = contents, let text = String(data: data, encoding: .utf8)
        else {
            throw CommandFailure("\(inputPath): cannot read the file (or it is not UTF-8)")
        }
        let log: AttemptLog
        do {
            log = try AttemptLog(jsonLines: text)
        } catch {
            throw CommandFailure("\(inputPath): \(error)")
        }
        standardError("backtest: \(log.attempts.count) attempts, \(log.events.count) history events")
        let report = Backtest.run(
            current: current, candidate: candidate, log: log, sampleSize: sample,
            progress: { done, total in standardError("backtest: \(done)/\(total) attempts") },
            changed: csv.map { file in
                { changes in file.write(changes.map { ChangedAttemptsCSV.line($0, lastFour: nil) }) }
            })
        try csv?.finish(standardError)
        print(render(report, current: current, candidate: candidate))
        return 0
    }

    /// The directory `issuerd serve` reads its rules from (`ISSUERD_RULES_DIR`, default `rules`).
    static var servingDirectory: String {
        ProcessInfo.processInfo.environment["ISSUERD_RULES_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "rules"
    }

    /// The line saying which two versions are compared, and where each came from.
    static func comparing(
        _ current: Ruleset, from origin: String, _ candidate: Ruleset, in candidateDirectory: String
    )
        -> String
    {
        "comparing current \(current.version) (\(origin)) with candidate \(candidate.version) (\(candidateDirectory))"
    }

    /// The current side and where it came from: `--current`'s directory; else what issuerd
    /// serves, which with `ISSUERD_RULES_APPROVAL=required` is the newest approved change (its
    /// files from PostgreSQL, whatever the directory holds), and otherwise the serving directory.
    private static func currentRuleset(_ arguments: Arguments) throws -> (Ruleset, origin: String) {
        if let directory = arguments.option("current") {
            return (try load(directory, role: "current"), "\(directory), --current")
        }
        if ProcessInfo.processInfo.environment["ISSUERD_RULES_APPROVAL"] == "required" {
            let pool = try RulesHistoryCommands.openDatabase(forReading: true)
            defer { pool.close() }
            let approved = try RulesHistoryCommands.databaseCall {
                try pool.withConnection { connection -> (UUID, [RulesetFile])? in
                    guard let serving = try RuleChangeStore.serving(connection: connection) else { return nil }
                    return (serving.changeID, try RuleChangeStore.files(of: serving.changeID, connection: connection))
                }
            }
            if let (changeID, files) = approved {
                let id = changeID.uuidString.lowercased()
                do {
                    let ruleset = try RulesetCompiler.compile(files, contentHasher: RulesCommand.contentHasher)
                    return (ruleset, "approved change \(id), what issuerd serves: ISSUERD_RULES_APPROVAL=required")
                } catch {
                    throw CommandFailure("the approved change \(id) does not check here:\n\(error.description)")
                }
            }
        }
        let directory = servingDirectory
        return (
            try load(directory, role: "current"),
            "\(directory), what issuerd serves: ISSUERD_RULES_DIR, default ./rules"
        )
    }

    private static func load(_ directory: String, role: String) throws -> Ruleset {
        do {
            return try RulesetLoader(path: directory, contentHasher: RulesCommand.contentHasher).load()
        } catch {
            throw CommandFailure("the \(role) ruleset in \(directory) does not check:\n\(error.description)")
        }
    }

    static func render(_ report: Backtest.Report, current: Ruleset, candidate: Ruleset) -> String {
        var lines: [String] = []
        func percent(_ count: Int) -> String {
            report.attempts == 0 ? "-" : String(format: "%.1f%%", Double(count) * 100 / Double(report.attempts))
        }
        func pad(_ text: String, _ width: Int) -> String {
            text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0)
        }
        lines.append("attempts: \(report.attempts)   current \(current.version)   candidate \(candidate.version)")
        lines.append("")
        lines.append(pad("flow", 10) + pad("current", 20) + "candidate")
        for flow in Flow.allCases {
            let before = report.currentMix[flow] ?? 0
            let after = report.candidateMix[flow] ?? 0
            lines.append(
                pad(flow.description, 10) + pad("\(before) (\(percent(before)))", 20) + "\(after) (\(percent(after)))")
        }
        lines.append("changed: \(report.changed) attempts")
        for before in Flow.allCases {
            for after in Flow.allCases where before != after {
                if let count = report.transitions[before]?[after], count > 0 {
                    lines.append("  \(before) → \(after): \(count)")
                }
            }
        }
        lines.append(
            "unresolved (a value was unknown): current \(report.currentUnresolved), candidate \(report.candidateUnresolved)"
        )
        lines.append("")
        let before = Dictionary(report.currentHits.map { ($0.ruleID, $0) }, uniquingKeysWith: { a, _ in a })
        let after = Dictionary(report.candidateHits.map { ($0.ruleID, $0) }, uniquingKeysWith: { a, _ in a })
        var ids = report.currentHits.map(\.ruleID)
        ids += report.candidateHits.map(\.ruleID).filter { before[$0] == nil }
        // The rule column is as wide as its longest id (with " (shadow)"), and never narrower than 40.
        let ruleWidth = max(40, (ids.map(\.count).max() ?? 0) + " (shadow)".count + 2)
        lines.append(pad("rule", ruleWidth) + pad("current", 10) + pad("candidate", 10) + "delta")
        for id in ids {
            let a = before[id]
            let b = after[id]
            let shadow = (b ?? a)?.mode == .shadow ? " (shadow)" : ""
            let delta = (b?.hits ?? 0) - (a?.hits ?? 0)
            lines.append(
                pad(id + shadow, ruleWidth) + pad(a.map { "\($0.hits)" } ?? "-", 10)
                    + pad(b.map { "\($0.hits)" } ?? "-", 10)
                    + (delta == 0 ? "" : (delta > 0 ? "+\(delta)" : "\(delta)")))
        }
        if let performance = report.performance {
            lines.append("")
            lines.append(
                "outcomes: \(performance.current.fraud) confirmed fraud, \(performance.current.legitimate) legitimate")
            for (name, side) in [("current", performance.current), ("candidate", performance.candidate)] {
                lines.append(
                    "  \(name): fraud passed green \(side.fraudPassedGreen) (\(Backtest.won(side.fraudPassedGreenAmount))), "
                        + "legitimate stepped up \(side.legitimateSteppedUp), legitimate declined \(side.legitimateDeclined)"
                )
            }
            lines.append("  candidate " + performance.summary)
            let keys = Set(performance.current.rules.keys).union(performance.candidate.rules.keys).sorted()
            let labelWidth = max(
                42,
                (keys.compactMap { (performance.current.rules[$0] ?? performance.candidate.rules[$0])?.ruleID.count }
                    .max() ?? 0) + " (shadow)".count + 4)
            lines.append(pad("  rule (fraud/legitimate decided)", labelWidth) + pad("current", 16) + "candidate")
            for key in keys {
                let a = performance.current.rules[key]
                let b = performance.candidate.rules[key]
                guard let rule = a ?? b else { continue }
                let shadow = rule.mode == .shadow ? " (shadow)" : ""
                lines.append(
                    pad("  " + rule.ruleID + shadow, labelWidth)
                        + pad(a.map { "\($0.fraud)/\($0.legitimate)" } ?? "-", 16)
                        + (b.map { "\($0.fraud)/\($0.legitimate)" } ?? "-"))
            }
        }
        if !report.sample.isEmpty {
            lines.append("")
            lines.append("sample of changed attempts:")
            for change in report.sample {
                lines.append("  \(change.attemptID): \(change.before.flow) → \(change.after.flow)")
                lines.append("    current:   " + summary(change.before))
                lines.append("    candidate: " + summary(change.after))
            }
        }
        return lines.joined(separator: "\n")
    }

    private static func summary(_ decision: RiskDecision) -> String {
        let live = decision.liveHits
        guard !live.isEmpty else { return "no live hits" }
        return live.map { "\($0.ruleID) {" + $0.values.map(\.description).joined(separator: ", ") + "}" }.joined(
            separator: "; ")
    }
}

/// The file `--changed-csv` writes: first as `FILE.partial` (mode 0600), renamed to FILE once
/// the backtest is done, so a failed run leaves no half file under the name asked for.
final class ChangedCSVFile {
    private let path: String
    private let partial: String
    private let handle: FileHandle
    private var rows = 0
    private var failure: String?

    init(path: String) throws {
        self.path = path
        partial = path + ".partial"
        guard
            FileManager.default.createFile(
                atPath: partial, contents: Data(ChangedAttemptsCSV.header.utf8), attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forWritingAtPath: partial)
        else {
            throw CommandFailure("\(path): cannot create \(partial)")
        }
        handle.seekToEndOfFile()
        self.handle = handle
    }

    deinit {
        try? handle.close()
        try? FileManager.default.removeItem(atPath: partial)  // gone already when finished
    }

    /// Appends lines (each with its line end).
    func write(_ lines: [String]) {
        guard failure == nil, !lines.isEmpty else { return }
        do {
            try handle.write(contentsOf: Data(lines.joined().utf8))
            rows += lines.count
        } catch {
            failure = "\(error)"
        }
    }

    /// Closes the file and gives it its name.
    func finish(_ say: (String) -> Void) throws {
        if let failure { throw CommandFailure("\(path): writing failed: \(failure)") }
        try handle.synchronize()
        try handle.close()
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
        try FileManager.default.moveItem(atPath: partial, toPath: path)
        say("backtest: \(rows) changed attempts written to \(path)")
    }
}
