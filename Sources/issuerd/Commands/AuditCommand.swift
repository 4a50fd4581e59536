import Foundation
import IssuerdAPI
import IssuerdStorage

/// `issuerd audit verify`: walks the audit log's hash chain.
enum AuditCommand: CommandDefinition {
    static let name = "audit"
    static let summary = "verify the audit log's hash chain (audit verify)"
    static let usage = """
        issuerd audit verify [--config FILE] [--no-seal] [--max-unsealed-age SECONDS] [--archive DIR]

        First chains the entries committed but not yet sealed (waiting for a running sealer's
        round), then recomputes every chained entry's hash in order and checks each link to its
        predecessor and that no sequence number is missing, then counts the entries still
        unchained (committed during the walk) and the age of the oldest. Progress goes to
        standard error. Exit status 0 when the chain is intact; 1 with the first broken sequence
        number when an entry was edited, deleted or reordered, or when an entry has stayed
        unchained longer than --max-unsealed-age (default 60: no sealer runs, or it fails).

        Entries moved out by `issuerd history archive` are not in the table: the walk starts at
        the archive's anchor (the last archived entry's hash). With --archive DIR it first walks
        the archive's segments (audit-*.jsonl.gz, each checked against its manifest's SHA-256)
        from the chain's first entry, and checks that they end exactly at the table's anchor.

        --no-seal       write nothing (e.g. on a read-only replica): only report unchained entries
        --archive DIR   also verify the archived segments in DIR

        Environment: ISSUERD_DATABASE_URL
        """

    static func run(_ words: [String]) throws -> Int32 {
        try runSubcommand(words, ["verify": verify])
    }

    private static func verify(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(
            words, options: ["config", "max-unsealed-age", "archive"], flags: ["no-seal"])
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
        // The archive first: files only, so a broken segment is reported before the database is read.
        var archived: (end: AuditArchive.Anchor?, segments: Int)?
        if let directory = arguments.option("archive") {
            switch try verifyArchive(URL(fileURLWithPath: directory)) {
            case .intact(let end, let segments): archived = (end, segments)
            case .broken(let message):
                print("audit archive BROKEN: \(message)")
                return 1
            }
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
        } else if let archivedThrough = report.archivedThrough {
            print(
                "audit chain intact: \(report.entries) entries after entry \(archivedThrough) (entries 1-\(archivedThrough) are archived)"
            )
        } else {
            print("audit chain intact: \(report.entries) entries")
        }
        if let archived {
            let anchor = report.archivedThrough.flatMap { sequence in
                report.archivedThroughHash.map { AuditArchive.Anchor(sequence: sequence, hash: $0) }
            }
            if archived.end == anchor {
                print(
                    "audit archive intact: \(archived.end?.sequence ?? 0) entries in \(archived.segments) segments, ending where the table's chain starts"
                )
            } else {
                let archiveEnd = archived.end.map { "entry \($0.sequence)" } ?? "nothing"
                let tableStart = anchor.map { "after entry \($0.sequence)" } ?? "at entry 1"
                print(
                    "audit archive BROKEN: the archive holds the chain through \(archiveEnd), the table continues it \(tableStart)\(archived.end?.sequence == anchor?.sequence ? " from another hash" : "")"
                )
                status = 1
            }
        } else if let archivedThrough = report.archivedThrough {
            standardError(
                "audit verify: entries 1-\(archivedThrough) are archived; give --archive DIR to verify them too")
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

    private enum ArchiveCheck {
        case intact(end: AuditArchive.Anchor?, segments: Int)
        case broken(String)
    }

    /// Walks every segment in `directory` in chain order: each file's SHA-256 is its manifest's,
    /// every line an entry, and the chain holds from entry 1 through the last segment.
    private static func verifyArchive(_ directory: URL) throws -> ArchiveCheck {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw CommandFailure("\(directory.path): cannot be read (\(error.localizedDescription))")
        }
        let manifests = names.filter { $0.hasPrefix("audit-") && $0.hasSuffix(".manifest.json") }.sorted()
        var walk = AuditLog.ChainWalk()
        for name in manifests {
            let manifestURL = directory.appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: manifestURL.path),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let file = object["file"] as? String, !file.contains("/"),
                let digest = object["sha256"] as? String,
                let through = (object["throughSeq"] as? NSNumber)?.int64Value
            else { return .broken("\(name) is not a segment manifest") }
            let segment = directory.appendingPathComponent(file)
            guard FileManager.default.fileExists(atPath: segment.path) else {
                return .broken("\(file), named by \(name), is missing")
            }
            standardError("audit verify: archive segment \(file)")
            let actual = try HistoryCommand.sha256(segment)
            guard actual == digest else { return .broken("\(file)'s SHA-256 is not the one its manifest records") }
            var problem: String?
            try HistoryCommand.gunzipLines(segment.path, limit: 1 << 20) { number, line in
                guard problem == nil else { return }
                guard let entry = AuditArchive.entry(line: line) else {
                    problem = "\(file) line \(number) is not an audit entry"
                    return
                }
                if let broken = walk.check(entry) { problem = "\(file): \(broken.problem ?? "the chain breaks")" }
            }
            if let problem { return .broken(problem) }
            guard walk.last?.sequence == through else {
                return .broken("\(file) ends at entry \(walk.last?.sequence ?? 0), its manifest says \(through)")
            }
        }
        return .intact(end: walk.last, segments: manifests.count)
    }
}
