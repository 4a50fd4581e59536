import Foundation
import IssuerdAPI

/// `issuerd audit verify`: walks the audit log's hash chain.
enum AuditCommand: CommandDefinition {
    static let name = "audit"
    static let summary = "verify the audit log's hash chain (audit verify)"
    static let usage = """
        issuerd audit verify [--config FILE]

        Recomputes every audit entry's hash in order and checks each link to its predecessor and
        that no sequence number is missing. Progress goes to standard error. Exit status 0 when
        the chain is intact; 1 with the first broken sequence number when an entry was edited,
        deleted or reordered.

        Environment: ISSUERD_DATABASE_URL
        """

    static func run(_ words: [String]) throws -> Int32 {
        guard let sub = words.first, sub != "--help", sub != "-h" else {
            print(usage)
            return words.isEmpty ? 2 : 0
        }
        guard sub == "verify" else { throw UsageError("unknown subcommand '\(sub)' (verify)") }
        let arguments = try Arguments(Array(words.dropFirst()), options: ["config"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        let pool = try OperatorCommandSupport.pool(try OperatorCommandSupport.reader(arguments))
        defer { pool.close() }
        let report = try OperatorCommandSupport.failing {
            try AuditChainCheck.verify(database: pool) { standardError("audit verify: \($0) entries checked") }
        }
        guard let broken = report.firstBrokenSequence else {
            print("audit chain intact: \(report.entries) entries")
            return 0
        }
        print("audit chain BROKEN at sequence \(broken): \(report.problem ?? "hash mismatch") (\(report.entries) entries before it verified)")
        return 1
    }
}
