import Foundation
import IssuerdCrypto
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// `issuerd history status` and `history archive`: a month past retention exported, verified and
/// dropped, and the backtest over its archive the same as over the database before the drop;
/// `rules check` refusing a velocity window longer than retention keeps.
@Suite("History: status, archive past retention, the archived backtest, retention and velocity windows")
struct HistoryArchiveTests {
    /// The report's lines after the first (which names where the attempts came from).
    static func report(_ output: String) -> [String] {
        Array(output.split(separator: "\n").dropFirst().map(String.init))
    }

    @Test(
        "A month archived and dropped: the file's SHA-256 is the manifest's, and its backtest report is the database's before the drop"
    )
    func archiveThenBacktest() throws {
        let app = try TestApplication()
        _ = try RulesHistoryTests.seed(app.pool)
        let rules = TestApplication.repositoryRoot.appendingPathComponent("rules")
        let candidate = app.directory.appendingPathComponent("candidate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: app.directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: rules, to: candidate)
        try Data(RulesHistoryTests.candidate.utf8).write(to: candidate.appendingPathComponent("policy/zz_extra.rules"))
        let owner = [
            "ISSUERD_DATABASE_URL": app.serviceConnectionString,
            "ISSUERD_MIGRATE_DATABASE_URL": app.database.connectionString, "ISSUERD_RULES_DIR": rules.path,
        ]
        let backtest = ["rules", "backtest", "--candidate", candidate.path, "--current", rules.path]
        let month = ["--since", "2025-03-01T00:00:00Z", "--until", "2025-04-01T00:00:00Z"]
        let before = try CommandLineRunner.run(backtest + month, environment: owner)
        #expect(before.status == 0, "\(before.standardError)")

        let status = try CommandLineRunner.run(["history", "status"], environment: owner)
        #expect(status.status == 0, "\(status.standardError)")
        #expect(status.standardOutput.contains("oldest kept month: 2025-03"), "\(status.standardOutput)")
        #expect(status.standardOutput.contains("provisioning_attempts_default"), "\(status.standardOutput)")

        let noRetention = try CommandLineRunner.run(
            ["history", "archive", "--dir", app.directory.appendingPathComponent("none").path], environment: owner)
        #expect(noRetention.status != 0)
        #expect(noRetention.standardError.contains("set ISSUERD_HISTORY_RETENTION or give --before"))

        let archive = app.directory.appendingPathComponent("archive")
        let archived = try CommandLineRunner.run(
            ["history", "archive", "--dir", archive.path, "--before", "2025-04-01T00:00:00Z"], environment: owner)
        #expect(archived.status == 0, "\(archived.standardError)")
        #expect(
            archived.standardOutput.contains("provisioning_attempts_2025_03: 5 attempts archived"),
            "\(archived.standardOutput)")
        let file = archive.appendingPathComponent("attempts-2025-03.jsonl.gz")
        let bytes = try #require(FileManager.default.contents(atPath: file.path))
        let digest = BinaryEncoding.hexString(SHA256.hash([UInt8](bytes)))
        let manifest = try String(
            contentsOf: archive.appendingPathComponent("attempts-2025-03.manifest.json"), encoding: .utf8)
        #expect(manifest.contains(#""sha256":"\#(digest)""#), "\(manifest)")
        let sums = try String(contentsOf: archive.appendingPathComponent("SHA256SUMS"), encoding: .utf8)
        #expect(sums == "\(digest)  attempts-2025-03.jsonl.gz\n")
        let left = try app.pool.withConnection { connection in
            try connection.query(
                """
                SELECT to_regclass('provisioning_attempts_2025_03') IS NULL AS dropped,
                       (SELECT count(*) FROM provisioning_attempts WHERE created_at < '2025-04-01')::int8 AS n
                """)[0]
        }
        #expect(try left.decode("dropped", as: Bool.self))
        #expect(try left.decode("n", as: Int64.self) == 0)

        // The month is gone from the database; its archive gives the report the database gave.
        let after = try CommandLineRunner.run(backtest + ["--input", file.path], environment: owner)
        #expect(after.status == 0, "\(after.standardError)")
        #expect(Self.report(after.standardOutput) == Self.report(before.standardOutput))
        #expect(after.standardOutput.contains("t.burst"))

        // A second archive finds nothing; an existing file is never overwritten.
        let again = try CommandLineRunner.run(
            ["history", "archive", "--dir", archive.path, "--before", "2025-04-01T00:00:00Z"], environment: owner)
        #expect(again.status == 0, "\(again.standardError)")
        #expect(again.standardOutput.contains("nothing to archive"), "\(again.standardOutput)")
    }

    @Test("The analysts' command-line reads go to ISSUERD_READ_DATABASE_URL when it is set")
    func readsOnTheReadDatabase() throws {
        let app = try TestApplication()
        _ = try RulesHistoryTests.seed(app.pool)
        let rules = TestApplication.repositoryRoot.appendingPathComponent("rules").path
        let backtest = [
            "rules", "backtest", "--candidate", rules, "--current", rules, "--since", "2025-03-01T10:00:00Z", "--until",
            "2025-03-01T11:00:00Z",
        ]
        // The primary's URL names no reachable server: only the read database can answer.
        let unreachable = "postgresql:///issuerd_none?host=/nonexistent-\(UUID().uuidString)&connect_timeout=2"
        let primaryOnly = try CommandLineRunner.run(backtest, environment: ["ISSUERD_DATABASE_URL": unreachable])
        #expect(primaryOnly.status != 0)
        let routed = try CommandLineRunner.run(
            backtest,
            environment: [
                "ISSUERD_DATABASE_URL": unreachable, "ISSUERD_READ_DATABASE_URL": app.serviceConnectionString,
            ])
        #expect(routed.status == 0, "\(routed.standardError)")
        #expect(routed.standardError.contains("backtest: 3 attempts replayed"), "\(routed.standardError)")
    }

    @Test(
        "rules check refuses a velocity window longer than retention keeps, naming it; a bad retention is a clear error"
    )
    func retentionRefusesLongWindows() throws {
        let rules = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-retention-\(UUID())")
        try FileManager.default.createDirectory(at: rules, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: rules) }
        try Data(RulesTestData.rule("t.long", outcome: "orange", when: "attempts(card, 60d) >= 50").utf8).write(
            to: rules.appendingPathComponent("long.rules"))
        let ok = try CommandLineRunner.run(
            ["rules", "check", rules.path], environment: ["ISSUERD_HISTORY_RETENTION": "3months"])
        #expect(ok.status == 0, "\(ok.standardOutput)\(ok.standardError)")
        let refused = try CommandLineRunner.run(
            ["rules", "check", rules.path], environment: ["ISSUERD_HISTORY_RETENTION": "2months"])
        #expect(refused.status == 1)
        #expect(
            refused.standardOutput.contains("looks back 60 days, past ISSUERD_HISTORY_RETENTION"),
            "\(refused.standardOutput)")
        #expect(refused.standardOutput.contains("ruleset refused"))
        let bad = try CommandLineRunner.run(
            ["rules", "check", rules.path], environment: ["ISSUERD_HISTORY_RETENTION": "25 weeks"])
        #expect(bad.status != 0)
        #expect(bad.standardError.contains("ISSUERD_HISTORY_RETENTION must be"), "\(bad.standardError)")
    }

    @Test("rules export and history archive refuse a --lookback outside whole seconds up to 400 days alike")
    func lookbackBounds() throws {
        for bad in ["7d", "34560001"] {
            let export = try CommandLineRunner.run(
                [
                    "rules", "export", "--since", "2025-03-01T00:00:00Z", "--until", "2025-04-01T00:00:00Z",
                    "--lookback", bad,
                ],
                environment: [:])
            #expect(export.status != 0)
            #expect(export.standardError.contains("--lookback takes whole seconds from 0 to 34560000"), "\(bad)")
            let archive = try CommandLineRunner.run(
                [
                    "history", "archive", "--dir", FileManager.default.temporaryDirectory.path, "--before",
                    "2025-04-01T00:00:00Z", "--lookback", bad,
                ], environment: [:])
            #expect(archive.status != 0)
            #expect(archive.standardError.contains("--lookback takes whole seconds from 0 to 34560000"), "\(bad)")
        }
    }
}
