/// One step of a migration file that runs outside a single transaction (first line
/// `-- issuerd:no-transaction`; see ``Migrator``).
struct MigrationStep: Sendable, Equatable {
    /// A SQL expression; the step runs only while it is true. Nil runs the step every time.
    let condition: String?
    /// The step's statements, sent as one script (one implicit transaction). In an ``each``
    /// step, a query whose rows' first column are the statements to run.
    let sql: String
    /// Whether `sql` is a query that generates the step's statements (`-- issuerd:step each`):
    /// each row's statement runs alone, outside any transaction, in the rows' order. Such a step
    /// repeats a statement that refuses a transaction block (`CREATE INDEX CONCURRENTLY`) over a
    /// list only the database knows, such as a table's partitions; its query names only the work
    /// still to do, so a run stopped half way resumes.
    var each = false

    static let noTransactionMarker = "-- issuerd:no-transaction"
    static let stepMarker = "-- issuerd:step"

    /// Whether `sql` asks to run step by step.
    static func isStepwise(_ sql: String) -> Bool {
        sql.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.trimmingCharacters(in: .whitespaces) == noTransactionMarker } ?? false
    }

    /// The steps of a stepwise file, in order (text before the first step line is commentary and
    /// is not run), or nil for a file that runs in one transaction.
    static func steps(of sql: String) -> [MigrationStep]? {
        guard isStepwise(sql) else { return nil }
        var steps: [MigrationStep] = []
        var condition: String?
        var each = false
        var lines: [Substring] = []
        var started = false
        func finish() {
            let body = lines.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
            if started && !body.isEmpty { steps.append(MigrationStep(condition: condition, sql: body, each: each)) }
            lines = []
        }
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed == stepMarker || trimmed.hasPrefix(stepMarker + " ") {
                finish()
                started = true
                var rest = trimmed.dropFirst(stepMarker.count).trimmingCharacters(in: .whitespaces)
                each = rest == "each" || rest.hasPrefix("each ")
                if each { rest = rest.dropFirst(4).trimmingCharacters(in: .whitespaces) }
                condition = rest.hasPrefix("when ") ? String(rest.dropFirst(5)) : nil
            } else {
                lines.append(line)
            }
        }
        finish()
        return steps
    }
}
