import Foundation
import IssuerdAPI

/// `issuerd audit verify`: walks the audit log's hash chain.
enum AuditCommand: CommandDefinition {
    static let name = "audit"
    static let summary = "verify the audit log's hash chain (audit verify)"
    static let usage = """
        issuerd audit verify [--config FILE] [--no-seal] [--max-unsealed-age SECONDS]

        First chains the entries committed but not yet sealed (waiting for a running sealer's
        round), then recomputes every chained entry's hash in order and checks each link to its
        predecessor and that no sequence number is missing, then counts the entries still
        unchained (committed during the walk) and the age of the oldest. Progress goes to
        standard error. Exit status 0 when the chain is intact; 1 with the first broken sequence
        number when an entry was edited, deleted or reordered, or when an entry has stayed
        unchained longer than --max-unsealed-age (default 60: no sealer runs, or it fails).

        --no-seal    write nothing (e.g. on a read-only replica): only report unchained entries

        Environment: ISSUERD_DATABASE_URL
        """

    static func run(_ words: [String]) throws -> Int32 {
        try runSubcommand(words, ["verify": verify])
    }

    private static func verify(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(
            words, options: ["config", "max-unsealed-age"], flags: ["no-seal"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        var maxAge = 60
        if let text = arguments.option("max-unsealed-age") {
            guard let seconds = Int(text), (1...86_400).contains(seconds) else {
                throw UsageError("--max-unsealed-age must be a whole number of seconds from 1 to 86400")
            }
            maxAge = seconds
        }
        let pool = try OperatorCommandSupport.pool(try OperatorCommandSupport.reader(arguments))
        defer { pool.close() }
        let report = try OperatorCommandSupport.failing {
            try AuditChainCheck.verify(
                database: pool, seal: !arguments.flag("no-seal"), unsealedMaxAge: .seconds(maxAge)
            ) {
                standardError("audit verify: \($0) entries checked")
            }
        }
        if report.sealed > 0 { standardError("audit verify: \(report.sealed) pending entries sealed first") }
        var status: Int32 = 0
        if let broken = report.firstBrokenSequence {
            print(
                "audit chain BROKEN at sequence \(broken): \(report.problem ?? "hash mismatch") (\(report.entries) entries before it verified)"
            )
            status = 1
        } else {
            print("audit chain intact: \(report.entries) entries")
        }
        if let age = report.oldestUnsealedAge {
            let seconds = age.components.seconds
            if report.hasStaleUnsealed {
                print(
                    "audit entries NOT SEALED: \(report.unsealed), the oldest \(seconds) s old (limit \(maxAge) s): is a sealer running? (ISSUERD_AUDIT_SEAL)"
                )
                status = 1
            } else {
                print("audit entries pending seal: \(report.unsealed), the oldest \(seconds) s old")
            }
        }
        return status
    }
}
