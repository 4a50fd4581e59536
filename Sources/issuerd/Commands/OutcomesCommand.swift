import Foundation
import IssuerdAPI
import IssuerdImport

/// `issuerd outcomes import FILE.csv`: what became of decisions, from a dispute system's export.
enum OutcomesCommand: CommandDefinition {
    static let name = "outcomes"
    static let summary = "record outcomes (fraud or legitimate) of decisions from a CSV file (outcomes import FILE.csv)"
    static let usage = """
        issuerd outcomes import FILE.csv [--config FILE]

        Records one outcome per line. The first row names the columns, in any order:

          attempt_id,token_reference,outcome,source,reported_at,amount_lost,currency,note
          0b5c4a1e-8f2d-4c3b-9a61-2f0e6d7c8b90,,fraud,chargeback,2026-11-02T09:30:00Z,350000,KRW,reason 4837
          ,DWSPMC000000000a1b2c3d,legitimate,cardholder,,,,confirmed on the phone

        attempt_id or token_reference (the token's creating attempt) names the attempt; outcome is
        fraud or legitimate; source is analyst, cardholder, chargeback or network; reported_at is
        RFC 3339 (empty: now); amount_lost is in minor units with its currency (KRW). Cells may be
        quoted ("a, b"); a quoted cell stays on its line.

        The file is streamed and recorded a thousand lines per transaction. Each line is recorded
        whole or not at all; a bad line (unknown id, bad field) is printed as `line N: reason` and
        the others go on. An outcome already recorded is not recorded again, so importing the same
        file twice records nothing new. Ends with
          outcomes import: recorded=N unchanged=N errors=N
        and exits 1 when any line failed.

        Environment: ISSUERD_DATABASE_URL
        """

    static func run(_ words: [String]) throws -> Int32 {
        try runSubcommand(words, ["import": importFile])
    }

    private static func importFile(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["config"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            throw UsageError("expected exactly one FILE.csv")
        }
        let reader = try OperatorCommandSupport.reader(arguments)
        let pool = try OperatorCommandSupport.pool(reader)
        defer { pool.close() }
        let summary = try OperatorCommandSupport.failing {
            try OutcomeImport.run(
                file: URL(fileURLWithPath: path), actor: OperatorCommandSupport.actor, now: Date(), database: pool
            ) { line, reason in print("line \(line): \(reason)") }
        }
        print("outcomes import: recorded=\(summary.recorded) unchanged=\(summary.unchanged) errors=\(summary.errors)")
        return summary.errors > 0 ? 1 : 0
    }
}
