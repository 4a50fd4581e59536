import Foundation
import IssuerdAPI
import IssuerdCore
import IssuerdCrypto
import IssuerdHistory
import IssuerdImport
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage

/// `issuerd history status`: the monthly partitions of the attempts' history.
enum HistoryCommand: CommandDefinition {
    static let name = "history"
    static let summary = "the attempts' monthly partitions: status, and archive past retention"
    static let usage = """
        issuerd history status [--config FILE]
        issuerd history archive --dir DIR [--before TIME] [--lookback SECONDS] [--rules DIR]

        status:

        Lists the partitions of provisioning_attempts, oldest first: each month (UTC) with its
        rows (counted exactly) and its size on disk (table, indexes and TOAST); the partition
        holding everything stored before the table was partitioned (legacy), if any; and the
        default partition, which takes an attempt no month partition covers (normally empty:
        issuerd serve makes months ahead). Then the oldest month with an attempt kept. Progress
        goes to standard error.

        archive: every month that ended on or before TIME (default: the start of the month
        ISSUERD_HISTORY_RETENTION months before this one) is exported to DIR as
        attempts-YYYY-MM.jsonl.gz in the backtest's JSONL format (docs/rules.md, "Backtest input"),
        with the history of the SECONDS before it (default: the longest velocity window of the
        rules in --rules, else ISSUERD_RULES_DIR, else ./rules) as history-only lines, so
        `issuerd rules backtest --input attempts-YYYY-MM.jsonl.gz` replays it alone. Each file's
        SHA-256 goes into attempts-YYYY-MM.manifest.json and DIR/SHA256SUMS (`sha256sum -c`). The
        file is read back (every line parsed, the attempts counted against the partition) before
        the month's partition is dropped; on any mismatch nothing is dropped and the exit status
        is 1. Attempts of such months waiting in the default partition are moved into their month
        first. The partition of everything stored before partitioning goes once its last month
        is past TIME. Then the audit log's entries written before TIME (the run of the hash chain
        after the last archive whose entries are all older) go to audit-FIRST-LAST.jsonl.gz with
        a manifest and a line in SHA256SUMS; the file is read back through the chain's checks
        before the entries are deleted and the chain's anchor recorded in audit_log_archives
        (`issuerd audit verify --archive DIR` checks the segments). Dropping and deleting need the
        owner role: ISSUERD_MIGRATE_DATABASE_URL when set.

        Environment: ISSUERD_DATABASE_URL, ISSUERD_MIGRATE_DATABASE_URL, ISSUERD_HISTORY_RETENTION,
        ISSUERD_RULES_DIR
        """

    static func run(_ words: [String]) throws -> Int32 {
        guard let sub = words.first, sub != "--help", sub != "-h" else {
            print(usage)
            return words.isEmpty ? 2 : 0
        }
        if sub == "archive" { return try archive(Array(words.dropFirst())) }
        guard sub == "status" else { throw UsageError("unknown subcommand '\(sub)' (status, archive)") }
        let arguments = try Arguments(Array(words.dropFirst()), options: ["config"], flags: [])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        let pool = try OperatorCommandSupport.pool(try OperatorCommandSupport.reader(arguments))
        defer { pool.close() }
        standardError("history status: counting rows per partition")
        let (partitions, oldest) = try OperatorCommandSupport.failing {
            try pool.withConnection { connection in
                (try AttemptPartitions.list(on: connection), try AttemptPartitions.oldestKeptMonth(on: connection))
            }
        }
        print("partition                              from        until            rows        bytes")
        for partition in partitions {
            let from = partition.from.map(month) ?? (partition.isDefault ? "(default)" : "(start)")
            let until = partition.until.map(month) ?? "-"
            print(
                partition.name.padding(toLength: 38, withPad: " ", startingAt: 0) + " "
                    + from.padding(toLength: 11, withPad: " ", startingAt: 0) + " "
                    + until.padding(toLength: 11, withPad: " ", startingAt: 0)
                    + String(partition.rows).leftPadded(to: 10) + " " + String(partition.bytes).leftPadded(to: 12))
        }
        print("oldest kept month: \(oldest.map(month) ?? "none (no attempt stored)")")
        return 0
    }

    static func archive(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["dir", "before", "lookback", "rules"], flags: [])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        let directory = URL(fileURLWithPath: try arguments.required("dir"))
        let environment = ProcessInfo.processInfo.environment
        let cutoff: Date
        if let text = arguments.option("before") {
            guard let date = RFC3339.date(text) else {
                throw UsageError("--before must be RFC 3339, e.g. 2025-04-01T00:00:00Z")
            }
            cutoff = date
        } else if let text = environment["ISSUERD_HISTORY_RETENTION"], !text.isEmpty {
            guard let retention = HistoryRetention(text) else {
                throw UsageError(
                    "ISSUERD_HISTORY_RETENTION must be a number of months or years, e.g. 25months or 2years")
            }
            cutoff = retention.cutoff(now: Date())
        } else {
            throw UsageError("nothing is past retention: set ISSUERD_HISTORY_RETENTION or give --before TIME")
        }
        let lookback = try RulesHistoryCommands.lookback(
            arguments, defaultRules: environment["ISSUERD_RULES_DIR"] ?? "rules")
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CommandFailure("\(directory.path): cannot create the directory (\(error.localizedDescription))")
        }
        let url = environment["ISSUERD_MIGRATE_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        let pool =
            try url.map {
                PostgresPool(
                    configuration: PostgresPoolConfiguration(connectionString: $0, size: 2), logger: archiveLogger)
            }
            ?? RulesHistoryCommands.openDatabase()
        defer { pool.close() }
        let partitions = try RulesHistoryCommands.databaseCall {
            try pool.withConnection { connection in
                // Attempts of an archived month that wait in the default partition join their month first.
                let stray = try connection.query(
                    "SELECT min(created_at) AS oldest FROM provisioning_attempts_default WHERE created_at < \(cutoff)"
                ).first?.decode("oldest", as: Date?.self)
                if let stray {
                    let made = try AttemptPartitions.make(
                        on: connection, since: stray, through: cutoff.addingTimeInterval(-1))
                    standardError(
                        "history archive: \(made) month partitions made for attempts in the default partition")
                }
                return try AttemptPartitions.list(on: connection, countRows: false).filter { partition in
                    !partition.isDefault && (partition.until.map { $0 <= cutoff } ?? false)
                }
            }
        }
        for partition in partitions {
            try archive(partition, lookback: lookback, into: directory, pool: pool)
        }
        let auditArchived = try archiveAudit(before: cutoff, into: directory, pool: pool)
        if partitions.isEmpty && !auditArchived {
            print("nothing to archive: no month ends on or before \(RFC3339.string(cutoff))")
        }
        return 0
    }

    /// Archives the audit log's entries written before `cutoff` (the longest run of the chain,
    /// after the last anchor, whose entries are all older) as one segment
    /// `audit-FIRST-LAST.jsonl.gz` with its manifest, reads the file back through the chain's
    /// checks, and only then records the anchor and deletes those entries (``AuditArchive``).
    ///
    /// - Returns: False when no entry qualifies.
    private static func archiveAudit(before cutoff: Date, into directory: URL, pool: PostgresPool) throws -> Bool {
        let (previous, end) = try RulesHistoryCommands.databaseCall {
            try pool.withConnection { connection in
                let previous = try AuditArchive.anchor(connection: connection)
                return (previous, try AuditArchive.archivable(before: cutoff, after: previous, connection: connection))
            }
        }
        guard let through = end else { return false }
        let first = (previous?.sequence ?? 0) + 1
        let base = "audit-" + padded(first) + "-" + padded(through)
        let plain = directory.appendingPathComponent(base + ".jsonl")
        let compressed = directory.appendingPathComponent(base + ".jsonl.gz")
        if FileManager.default.fileExists(atPath: compressed.path) {
            throw CommandFailure("\(compressed.path) exists already: move it away or archive into another directory")
        }
        standardError("history archive: audit entries \(first)-\(through): exporting")
        guard
            FileManager.default.createFile(atPath: plain.path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forWritingAtPath: plain.path)
        else { throw CommandFailure("\(plain.path): cannot be written") }
        var written = 0
        do {
            defer { try? handle.close() }
            var buffer = Data()
            try RulesHistoryCommands.databaseCall {
                try pool.transaction(isolation: .repeatableRead) { connection in
                    try AuditArchive.entries(after: previous, through: through, connection: connection) { entry in
                        buffer.append(contentsOf: Array((try AuditArchive.line(entry) + "\n").utf8))
                        written += 1
                        if buffer.count >= 1 << 20 {
                            handle.write(buffer)
                            buffer.removeAll(keepingCapacity: true)
                        }
                    }
                }
            }
            handle.write(buffer)
        }
        _ = try tool("gzip", ["-n", "-f", plain.path])
        standardError("history archive: audit entries \(first)-\(through): verifying \(compressed.lastPathComponent)")
        // Read back: every line is an entry, and the chain holds from the last anchor to the end.
        var walk = AuditLog.ChainWalk(after: previous)
        try gunzipLines(compressed.path, limit: 1 << 20) { number, line in
            guard let entry = AuditArchive.entry(line: line) else {
                throw CommandFailure("\(compressed.path): line \(number) is not an audit entry; nothing deleted")
            }
            if let broken = walk.check(entry) {
                throw CommandFailure("\(compressed.path): \(broken.problem ?? "the chain breaks"); nothing deleted")
            }
        }
        guard let last = walk.last, last.sequence == through, walk.entries == written else {
            throw CommandFailure(
                "\(compressed.path): holds \(walk.entries) chained entries, \(written) were written; nothing deleted")
        }
        let digest = try sha256(compressed)
        let manifest = """
            {"file":\(HistoryExport.quote(compressed.lastPathComponent)),"sha256":"\(digest)",\
            "firstSeq":\(first),"throughSeq":\(through),"throughHash":"\(BinaryEncoding.hexString(last.hash))",\
            "before":"\(HistoryExport.timestamp(cutoff))","entries":\(written),"format":"issuerd audit segment JSONL, gzip"}

            """
        try Data(manifest.utf8).write(to: directory.appendingPathComponent(base + ".manifest.json"))
        try recordSum(digest, of: compressed, in: directory)
        let deleted: Int
        do {
            deleted = try RulesHistoryCommands.databaseCall {
                try pool.withConnection { connection in
                    try AuditArchive.drop(
                        after: previous, through: last, file: compressed.lastPathComponent, digest: digest,
                        connection: connection)
                }
            }
        } catch let error as AuditArchiveError {
            throw CommandFailure(error.description)
        }
        print(
            "audit entries \(first)-\(through): \(deleted) archived to \(compressed.lastPathComponent) (sha256 \(digest)), deleted from audit_log"
        )
        return true
    }

    /// A sequence number zero-padded to 12 digits, so segment files sort in chain order.
    private static func padded(_ sequence: Int64) -> String {
        let digits = String(sequence)
        return String(repeating: "0", count: max(0, 12 - digits.count)) + digits
    }

    private static let archiveLogger = Logger(
        label: "issuerd.history", minimumLevel: .warning, handler: JSONLogHandler.standardError)

    /// Exports one partition, verifies the file, records it, then drops the partition.
    private static func archive(
        _ partition: AttemptPartitions.Partition, lookback: Int, into directory: URL, pool: PostgresPool
    ) throws {
        guard let until = partition.until else { return }
        let base: String
        if let from = partition.from {
            base = "attempts-\(month(from))"
        } else {
            base = "attempts-before-\(month(until))"
        }
        let plain = directory.appendingPathComponent(base + ".jsonl")
        let compressed = directory.appendingPathComponent(base + ".jsonl.gz")
        if FileManager.default.fileExists(atPath: compressed.path) {
            throw CommandFailure("\(compressed.path) exists already: move it away or archive into another directory")
        }
        standardError("history archive: \(partition.name): exporting")
        let (rows, lines, since) = try RulesHistoryCommands.databaseCall {
            try pool.transaction(isolation: .repeatableRead) { connection -> (Int64, Int, Date) in
                let rows = try connection.query(
                    PostgresQuery(
                        unsafeSQL:
                            "SELECT count(*)::int8 AS n, min(created_at) AS oldest FROM \(AttemptPartitions.quoted(partition.name))"
                    )
                )[0]
                let count = try rows.decode("n", as: Int64.self)
                let since = try partition.from ?? rows.decode("oldest", as: Date?.self) ?? until
                let export = HistoryExport(since: since, until: until, lookbackSeconds: lookback)
                guard
                    FileManager.default.createFile(
                        atPath: plain.path, contents: nil, attributes: [.posixPermissions: 0o600]),
                    let handle = FileHandle(forWritingAtPath: plain.path)
                else { throw CommandFailure("\(plain.path): cannot be written") }
                defer { try? handle.close() }
                let lines = try RulesHistoryCommands.write(
                    export, connection: connection, to: handle, label: "history archive: \(partition.name)")
                return (count, lines, since)
            }
        }
        _ = try tool("gzip", ["-n", "-f", plain.path])
        standardError(
            "history archive: \(partition.name): \(lines) lines written, verifying \(compressed.lastPathComponent)")
        // Read back: the file decompresses, parses as a backtest input, and holds every attempt;
        // streamed through gzip in chunks of lines, so memory stays flat whatever the month's size.
        var attempts = 0
        var readBack = 0
        do {
            var chunk = ""
            var chunkStart = 1
            func parse() throws {
                do {
                    attempts += try AttemptLog(jsonLines: chunk).attempts.count
                } catch {
                    throw CommandFailure(
                        "\(compressed.path): does not read back as a backtest input (line \(chunkStart + error.line - 1): \(error.message)); nothing dropped"
                    )
                }
                chunk = ""
            }
            try gunzipLines(compressed.path, limit: AttemptLog.maximumLineBytes) { number, line in
                if chunk.isEmpty { chunkStart = number }
                chunk += String(decoding: line, as: UTF8.self)
                chunk += "\n"
                if !line.isEmpty { readBack += 1 }
                if number - chunkStart >= 9_999 { try parse() }
            }
            if !chunk.isEmpty { try parse() }
        }
        guard attempts == Int(rows), readBack == lines else {
            throw CommandFailure(
                "\(compressed.path): holds \(attempts) attempts in \(readBack) lines, the partition \(rows) in \(lines) lines; nothing dropped"
            )
        }
        let digest = try sha256(compressed)
        let manifest = """
            {"file":\(HistoryExport.quote(compressed.lastPathComponent)),"sha256":"\(digest)",\
            "partition":\(HistoryExport.quote(partition.name)),"since":"\(HistoryExport.timestamp(since))",\
            "until":"\(HistoryExport.timestamp(until))","attempts":\(rows),"lines":\(lines),"lookbackSeconds":\(lookback),\
            "format":"issuerd backtest JSONL, gzip"}

            """
        try Data(manifest.utf8).write(to: directory.appendingPathComponent(base + ".manifest.json"))
        try recordSum(digest, of: compressed, in: directory)
        try RulesHistoryCommands.databaseCall {
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "SET lock_timeout = '5s'")
                try connection.execute(unsafeSQL: "DROP TABLE \(AttemptPartitions.quoted(partition.name))")
            }
        }
        print(
            "\(partition.name): \(rows) attempts archived to \(compressed.lastPathComponent) (sha256 \(digest)), partition dropped"
        )
    }

    /// The SHA-256 of `file`, as `sha256sum` prints it.
    static func sha256(_ file: URL) throws -> String {
        let digest = String(String(decoding: try tool("sha256sum", [file.path]), as: UTF8.self).prefix { $0 != " " })
        guard digest.count == 64 else { throw CommandFailure("sha256sum gave no digest for \(file.path)") }
        return digest
    }

    /// Appends `file`'s line to DIR/SHA256SUMS (made 0600 when missing), for `sha256sum -c`.
    private static func recordSum(_ digest: String, of file: URL, in directory: URL) throws {
        let sums = directory.appendingPathComponent("SHA256SUMS")
        if !FileManager.default.fileExists(atPath: sums.path) {
            _ = FileManager.default.createFile(atPath: sums.path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        guard let handle = FileHandle(forWritingAtPath: sums.path) else {
            throw CommandFailure("\(sums.path): cannot be written")
        }
        defer { try? handle.close() }
        handle.seekToEndOfFile()
        handle.write(Data("\(digest)  \(file.lastPathComponent)\n".utf8))
    }

    /// Calls `body` with each line (1-based number, bytes) of the gzip file at `path`, decompressed
    /// by `gzip -dc` as it is read: memory holds one read and one line, whatever the file's size.
    static func gunzipLines(_ path: String, limit: Int, _ body: (Int, [UInt8]) throws -> Void) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-dc", path]
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            throw CommandFailure("cannot run gzip: \(error.localizedDescription)")
        }
        var reader = LineReader(handle: output.fileHandleForReading, limit: limit)
        do {
            while let (number, line) = try reader.next() { try body(number, line) }
        } catch let error as LineReader.LineTooLong {
            process.terminate()
            process.waitUntilExit()
            throw CommandFailure("\(path): line \(error.line) is \(error.message)")
        } catch {
            process.terminate()
            process.waitUntilExit()
            throw error
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CommandFailure("\(path): gzip -dc failed with status \(process.terminationStatus)")
        }
    }

    /// Runs `name` (found on PATH) and returns its standard output; a failure is a clear error.
    static func tool(_ name: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [name] + arguments
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            throw CommandFailure("cannot run \(name): \(error.localizedDescription)")
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CommandFailure(
                "\(name) \(arguments.joined(separator: " ")) failed with status \(process.terminationStatus)")
        }
        return data
    }

    /// `2027-01` for the month starting at `date` (UTC).
    private static func month(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month], from: date)
        return String(format: "%04d-%02d", parts.year ?? 0, parts.month ?? 0)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
