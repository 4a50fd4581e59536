import Foundation
import IssuerdCore

/// Applies the numbered SQL files of a directory, in order, each in its own transaction.
///
/// Applied migrations are recorded in `issuerd_schema_migrations(version, name, checksum,
/// applied_at)`. A session advisory lock serialises instances that start together, so each
/// migration runs once. An applied file that changed, or vanished, stops the run before
/// anything new is applied.
///
/// Checksums are SHA-256 of the file bytes, computed by the server (`sha256(bytea)`,
/// PostgreSQL 11+): Foundation has no SHA-256 on Linux and this module must not import
/// OpenSSL, and a server-side digest needs no closure threaded through every caller.
///
/// Files run inside `BEGIN … COMMIT`, so they must not contain transaction control or
/// statements that refuse a transaction block (`CREATE INDEX CONCURRENTLY`). A file whose first
/// line is `-- issuerd:no-transaction` runs instead step by step (``MigrationStep``): each step,
/// from one `-- issuerd:step` line to the next, is one transaction of its own (one statement
/// alone, such as `CREATE INDEX CONCURRENTLY`, runs outside any). `-- issuerd:step when EXPR`
/// runs the step only while the SQL expression `EXPR` is true, so a run stopped half way
/// resumes where it stopped; the version is recorded after the last step. `-- issuerd:step each`
/// (optionally followed by `when EXPR`) makes the step a query whose rows are statements, each
/// run alone: one `CREATE INDEX CONCURRENTLY` per partition, say.
public struct Migrator: Sendable {
    /// The directory holding `NNNN_name.sql` files.
    public let directory: URL
    private let logger: Logger
    private let reviewedEdits: [Int: Set<String>]

    /// Applied migrations whose comments were edited afterwards, each with the checksums of its
    /// earlier bytes. A database that recorded one of those checksums is current, so a reviewed
    /// comment-only edit does not stop a running installation. Any other change is still refused.
    public static let reviewedCommentEdits: [Int: Set<String>] = [
        // 0014: a work-tracker reference removed from the header comment.
        14: ["af68b03a0beb345a805cea79e2282d3b9308acaec7fb33b9642932ffc109d753"]
    ]

    /// `pg_advisory_lock` key: the ASCII bytes of "issuerd" and a zero, as a signed 64-bit value.
    static let lockKey: Int64 = 0x6973_7375_6572_6400

    /// Creates a migrator for `directory`.
    ///
    /// - Parameter reviewedEdits: Per version, the earlier checksums still accepted for an
    ///   applied file (``reviewedCommentEdits`` unless a test supplies its own).
    public init(directory: URL, logger: Logger, reviewedEdits: [Int: Set<String>] = Migrator.reviewedCommentEdits) {
        self.directory = directory
        self.logger = logger
        self.reviewedEdits = reviewedEdits
    }

    /// Whether `record` matches `file`: the same name, and the file's checksum or one of the
    /// reviewed earlier checksums of that version.
    private func matches(_ record: AppliedMigration, _ file: MigrationFile, checksum: String) -> Bool {
        record.name == file.name
            && (record.checksum == checksum || reviewedEdits[file.version]?.contains(record.checksum) == true)
    }

    /// Applies every migration the database has not recorded yet.
    ///
    /// - Parameter pool: Where to apply them; one connection is held for the whole run, its
    ///   statements without the pool's statement timeout (a migration may rewrite a table, and
    ///   another instance may hold the migration lock while it does).
    /// - Returns: The migrations applied by this call, in order (empty when up to date).
    /// - Throws: ``PostgresError/Code/migration`` naming the file for a changed or missing
    ///   file, or a failing migration (with the server's SQLSTATE).
    @discardableResult
    public func migrate(using pool: PostgresPool) throws -> [AppliedMigration] {
        let files = try MigrationFile.load(from: directory)
        return try pool.withConnection { connection in
            try connection.withStatementTimeout(nil) { try migrate(files, on: connection) }
        }
    }

    private func migrate(_ files: [MigrationFile], on connection: PostgresConnection) throws -> [AppliedMigration] {
        // Up to date: nothing to lock or create, so a role that may not run DDL (the service
        // role, docs/configuration.md) starts; a changed or missing file still stops it.
        if try Self.isRecorded(on: connection) {
            let applied = try Self.recorded(on: connection)
            let problems = problems(
                files: files, checksums: try Self.checksums(of: files, on: connection), applied: applied)
            guard problems.isEmpty else {
                throw PostgresError(code: .migration, message: problems.joined(separator: "; "))
            }
            if files.allSatisfy({ applied[$0.version] != nil }) { return [] }
        }
        try connection.execute("SELECT pg_advisory_lock(\(Self.lockKey))")
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock(\(Self.lockKey))") }
        try connection.execute(
            unsafeSQL: """
                CREATE TABLE IF NOT EXISTS issuerd_schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
        let applied = try Self.recorded(on: connection)
        let checksums = try Self.checksums(of: files, on: connection)
        let problems = problems(files: files, checksums: checksums, applied: applied)
        guard problems.isEmpty else {
            throw PostgresError(code: .migration, message: problems.joined(separator: "; "))
        }
        var newlyApplied: [AppliedMigration] = []
        for (file, checksum) in zip(files, checksums) where applied[file.version] == nil {
            newlyApplied.append(try apply(file, checksum: checksum, on: connection))
        }
        return newlyApplied
    }

    /// Reports every migration's state without changing anything.
    ///
    /// - Returns: One entry per file and per recorded version without a file, by version.
    /// - Throws: ``PostgresError`` when the directory or the database cannot be read.
    public func status(using pool: PostgresPool) throws -> [MigrationStatus] {
        let files = try MigrationFile.load(from: directory)
        return try pool.withConnection { connection in
            let applied = try Self.isRecorded(on: connection) ? Self.recorded(on: connection) : [:]
            let checksums = try Self.checksums(of: files, on: connection)
            var report: [MigrationStatus] = []
            for (file, checksum) in zip(files, checksums) {
                let state: MigrationStatus.State
                if let record = applied[file.version] {
                    state = matches(record, file, checksum: checksum) ? .applied(at: record.appliedAt) : .changed
                } else {
                    state = .pending
                }
                report.append(MigrationStatus(version: file.version, fileName: file.fileName, state: state))
            }
            for record in applied.values where !files.contains(where: { $0.version == record.version }) {
                report.append(MigrationStatus(version: record.version, fileName: record.fileName, state: .missingFile))
            }
            return report.sorted { $0.version < $1.version }
        }
    }

    private func apply(
        _ file: MigrationFile, checksum: String, on connection: PostgresConnection
    ) throws -> AppliedMigration {
        do {
            if let steps = MigrationStep.steps(of: file.sql) {
                for (index, step) in steps.enumerated() {
                    if let condition = step.condition {
                        let rows = try connection.query(
                            PostgresQuery(unsafeSQL: "SELECT coalesce((\(condition))::boolean, false) AS due"))
                        guard try rows.first?.decode("due", as: Bool.self) == true else { continue }
                    }
                    try runAgainIfTransient(file: file, step: index + 1) {
                        if step.each {
                            let statements = try connection.query(PostgresQuery(unsafeSQL: step.sql)).map {
                                try $0.decode(0, as: String.self)
                            }
                            for statement in statements { try connection.execute(unsafeSQL: statement) }
                        } else {
                            try connection.execute(unsafeSQL: step.sql)
                        }
                    }
                    logger.debug(
                        "migration step applied",
                        ["version": .int(file.version), "step": .int(index + 1), "steps": .int(steps.count)])
                }
            }
            let appliedAt = try connection.transaction { connection in
                if !MigrationStep.isStepwise(file.sql) { try connection.execute(unsafeSQL: file.sql) }
                let rows = try connection.query(
                    """
                    INSERT INTO issuerd_schema_migrations (version, name, checksum)
                    VALUES (\(file.version), \(file.name), \(checksum)) RETURNING applied_at
                    """)
                return try rows.first?.decode("applied_at", as: Date.self) ?? Date()
            }
            logger.debug("migration applied", ["version": .int(file.version), "file": .string(file.fileName)])
            return AppliedMigration(version: file.version, name: file.name, checksum: checksum, appliedAt: appliedAt)
        } catch var error as PostgresError {
            error.message = "migration \(file.fileName) failed: \(error.message)"
            throw error
        }
    }

    /// How many times a step is tried when PostgreSQL ends it for a deadlock or a serialization
    /// failure (with a live service, a lock the step takes can meet requests' locks in a cycle).
    static let stepAttempts = 5

    /// Runs a step, again after a short growing pause when PostgreSQL ended it for a deadlock or a
    /// serialization failure. Safe because a step runs alone or in a transaction of its own, so
    /// the failed attempt left nothing, and a step's `when` or `each` query names the work left.
    private func runAgainIfTransient(file: MigrationFile, step: Int, _ body: () throws -> Void) throws {
        for attempt in 1... {
            do {
                return try body()
            } catch let error as PostgresError where error.isTransient && attempt < Self.stepAttempts {
                logger.warning(
                    "migration step ended by the server, run again",
                    [
                        "version": .int(file.version), "step": .int(step), "attempt": .int(attempt),
                        "sqlstate": .string(error.sqlState ?? ""),
                    ])
                Thread.sleep(forTimeInterval: 0.1 * Double(attempt))
            }
        }
    }

    private static func isRecorded(on connection: PostgresConnection) throws -> Bool {
        let exists = try connection.query("SELECT to_regclass('issuerd_schema_migrations') IS NOT NULL AS present")
        return try exists.first?.decode("present", as: Bool.self) == true
    }

    private static func recorded(on connection: PostgresConnection) throws -> [Int: AppliedMigration] {
        var applied: [Int: AppliedMigration] = [:]
        for row in try connection.query("SELECT version, name, checksum, applied_at FROM issuerd_schema_migrations") {
            let record = AppliedMigration(
                version: try row.decode("version"), name: try row.decode("name"), checksum: try row.decode("checksum"),
                appliedAt: try row.decode("applied_at"))
            applied[record.version] = record
        }
        return applied
    }

    private static func checksums(of files: [MigrationFile], on connection: PostgresConnection) throws -> [String] {
        try files.map { file in
            let rows = try connection.query("SELECT encode(sha256(\(file.contents)), 'hex') AS checksum")
            guard let checksum = try rows.first?.decode("checksum", as: String.self) else {
                throw PostgresError(code: .other, message: "the server returned no checksum")
            }
            return checksum
        }
    }

    private func problems(
        files: [MigrationFile], checksums: [String], applied: [Int: AppliedMigration]
    ) -> [String] {
        var problems: [String] = []
        for (file, checksum) in zip(files, checksums) {
            guard let record = applied[file.version] else { continue }
            if record.name != file.name {
                problems.append(
                    "migration file \(file.fileName) changed after it was applied: version \(file.version) was applied as \(record.fileName)"
                )
            } else if !matches(record, file, checksum: checksum) {
                problems.append(
                    "migration file \(file.fileName) changed after it was applied (recorded sha256 \(record.checksum.prefix(12))…, file now \(checksum.prefix(12))…); add a new migration instead of editing an applied one"
                )
            }
        }
        for record in applied.values.sorted(by: { $0.version < $1.version })
        where !files.contains(where: { $0.version == record.version }) {
            problems.append(
                "migration \(record.fileName) was applied but its file is missing from the migrations directory")
        }
        return problems
    }
}
