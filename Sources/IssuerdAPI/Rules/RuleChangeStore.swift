import Foundation
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage

/// Rule changes under maker-checker (`rule_changes`, sql/0032): proposals with their files,
/// rule-level diff and example results; approvals and rejections by a second person. Every
/// step is audited in the same transaction as the change itself.
package enum RuleChangeStore {
    /// One change as `GET /v1/admin/rules/changes` lists it.
    package struct Change: Encodable, Sendable {
        package struct Tests: Codable, Sendable {
            package var passed: Int
            package var failed: Int
            /// Rules no example makes hit (they do not refuse a version).
            package var uncoveredRules: [String]?
            /// The first positioned errors of a `failed` change.
            package var errors: [String]?
        }

        package var changeId: UUID
        package var version: String
        package var previousVersion: String?
        package var status: String
        package var proposedBy: String
        package var proposedAt: Date
        package var decidedBy: String?
        package var decidedAt: Date?
        package var note: String?
        package var gitCommit: String?
        package var diff: [RuleChange]
        package var tests: Tests

        /// Ids are written in lowercase, as the audit log and every other id of the API are.
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(changeId.uuidString.lowercased(), forKey: .changeId)
            try container.encode(version, forKey: .version)
            try container.encode(previousVersion, forKey: .previousVersion)
            try container.encode(status, forKey: .status)
            try container.encode(proposedBy, forKey: .proposedBy)
            try container.encode(proposedAt, forKey: .proposedAt)
            try container.encodeIfPresent(decidedBy, forKey: .decidedBy)
            try container.encodeIfPresent(decidedAt, forKey: .decidedAt)
            try container.encodeIfPresent(note, forKey: .note)
            try container.encodeIfPresent(gitCommit, forKey: .gitCommit)
            try container.encode(diff, forKey: .diff)
            try container.encode(tests, forKey: .tests)
        }

        private enum CodingKeys: String, CodingKey {
            case changeId, version, previousVersion, status, proposedBy, proposedAt, decidedBy, decidedAt, note,
                gitCommit, diff, tests
        }
    }

    /// Why a decision was refused.
    package enum DecisionError: Error, Equatable {
        case notFound
        case notProposed(status: String)
        case selfApproval
    }

    private static let columns =
        "change_id, version, previous_version, status, proposed_by, proposed_at, decided_by, decided_at, note, git_commit, diff, tests"

    /// Records a proposal of `tested` (superseding any open one) and audits it; nil when the
    /// version is already proposed (another instance watching the same directory got there first).
    package static func propose(
        _ tested: TestedRuleset, previous: Ruleset?, by person: String, actor: String, gitCommit: String?,
        trigger: String,
        at time: Date, connection: PostgresConnection
    ) throws -> Change? {
        let change = Change(
            changeId: UUID(), version: tested.ruleset.version, previousVersion: previous?.version, status: "proposed",
            proposedBy: person, proposedAt: time, gitCommit: gitCommit,
            diff: RulesetDiff.between(previous, tested.ruleset),
            tests: .init(passed: tested.passed, failed: 0, uncoveredRules: tested.uncoveredRules))
        return try connection.transaction { connection -> Change? in
            try connection.execute("SELECT pg_advisory_xact_lock(\(lockKey))")
            let open = try connection.query(
                "SELECT 1 FROM rule_changes WHERE version = \(change.version) AND status = 'proposed'")
            guard open.isEmpty else { return nil }
            try connection.execute(
                """
                UPDATE rule_changes SET status = 'superseded', decided_at = \(time)
                WHERE status = 'proposed'
                """)
            try insert(change, files: tested.files, connection: connection)
            try audit(
                change, action: "rules.proposed", actor: actor, person: person, trigger: trigger, at: time,
                connection: connection)
            return change
        }
    }

    /// Records a version that was refused (does not compile, or an example fails) as `failed`.
    package static func recordFailure(
        files: [RulesetFile], version: String, previous: String?, errors: [String], by person: String,
        gitCommit: String?,
        at time: Date, connection: PostgresConnection
    ) throws {
        let change = Change(
            changeId: UUID(), version: version, previousVersion: previous, status: "failed", proposedBy: person,
            proposedAt: time, gitCommit: gitCommit, diff: [],
            tests: .init(passed: 0, failed: errors.count, errors: Array(errors.prefix(20))))
        try insert(change, files: files, connection: connection)
    }

    /// Approves or rejects a proposed change on behalf of `person`, and audits it.
    ///
    /// - Throws: ``DecisionError`` (not found, not `proposed`, or approved by its proposer).
    package static func decide(
        _ changeID: UUID, approve: Bool, by person: String, actor: String, note: String?, at time: Date,
        connection: PostgresConnection
    ) throws -> Change {
        try connection.transaction { connection -> Change in
            try connection.execute("SELECT pg_advisory_xact_lock(\(lockKey))")
            guard var change = try read(changeID, connection: connection) else { throw DecisionError.notFound }
            guard change.status == "proposed" else { throw DecisionError.notProposed(status: change.status) }
            if approve, sameperson(change.proposedBy, person) { throw DecisionError.selfApproval }
            change.status = approve ? "approved" : "rejected"
            change.decidedBy = person
            change.decidedAt = time
            change.note = note
            let approvedSeq = approve ? "nextval('rule_changes_approved_seq')" : "NULL"
            try connection.execute(
                """
                UPDATE rule_changes SET status = \(change.status), decided_by = \(person), decided_at = \(time),
                       note = \(note), approved_seq = \(unsafeSQL: approvedSeq)
                WHERE change_id = \(changeID)
                """)
            try audit(
                change, action: approve ? "rules.approved" : "rules.rejected", actor: actor, person: person,
                trigger: "approval", at: time, connection: connection)
            return change
        }
    }

    /// The first approved change when none exists yet: the version an instance started with
    /// becomes the base the next proposals are compared with. Nothing when one exists.
    package static func recordBaseline(
        _ tested: TestedRuleset, by person: String, gitCommit: String?, at time: Date, connection: PostgresConnection
    ) throws {
        try connection.transaction { connection in
            try connection.execute("SELECT pg_advisory_xact_lock(\(lockKey))")
            guard try connection.query("SELECT 1 FROM rule_changes WHERE status = 'approved' LIMIT 1").isEmpty else {
                return
            }
            var change = Change(
                changeId: UUID(), version: tested.ruleset.version, previousVersion: nil, status: "approved",
                proposedBy: person, proposedAt: time, decidedBy: "start-up", decidedAt: time,
                note: "the version the first instance under approval started with", gitCommit: gitCommit,
                diff: RulesetDiff.between(nil, tested.ruleset),
                tests: .init(passed: tested.passed, failed: 0, uncoveredRules: tested.uncoveredRules))
            try insert(change, files: tested.files, connection: connection)
            try connection.execute(
                "UPDATE rule_changes SET approved_seq = nextval('rule_changes_approved_seq') WHERE change_id = \(change.changeId)"
            )
            change.status = "approved"
            try audit(
                change, action: "rules.approved", actor: "start-up", person: "start-up", trigger: "start-up", at: time,
                connection: connection)
        }
    }

    /// The serving change: the approved one with the highest approval order.
    package static func serving(
        connection: PostgresConnection
    ) throws -> (changeID: UUID, version: String, decidedBy: String?)? {
        guard
            let row = try connection.query(
                """
                SELECT change_id, version, decided_by FROM rule_changes
                WHERE approved_seq IS NOT NULL ORDER BY approved_seq DESC LIMIT 1
                """
            ).first
        else { return nil }
        return (try row.decode("change_id"), try row.decode("version"), try row.decode("decided_by"))
    }

    /// A change's files, as proposed.
    package static func files(of changeID: UUID, connection: PostgresConnection) throws -> [RulesetFile] {
        guard let row = try connection.query("SELECT files FROM rule_changes WHERE change_id = \(changeID)").first
        else {
            return []
        }
        let stored = try row.decode("files", as: PostgresJSON.self).decode([StoredFile].self)
        return stored.map { RulesetFile(path: $0.path, contents: $0.contents) }
    }

    /// Changes, newest first.
    package static func list(status: String?, limit: Int, connection: PostgresConnection) throws -> [Change] {
        try connection.query(
            """
            SELECT \(unsafeSQL: columns) FROM rule_changes
            WHERE (\(status)::text IS NULL OR status = \(status)) ORDER BY seq DESC LIMIT \(limit)
            """
        ).map(change)
    }

    /// One change.
    package static func read(_ changeID: UUID, connection: PostgresConnection) throws -> Change? {
        try connection.query("SELECT \(unsafeSQL: columns) FROM rule_changes WHERE change_id = \(changeID)").first.map(
            change)
    }

    /// Names compare without case and surrounding spaces: `Ana` may not approve what `ana ` proposed.
    package static func sameperson(_ a: String, _ b: String) -> Bool {
        a.trimmingCharacters(in: .whitespaces).lowercased() == b.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// Serialises proposals and decisions across instances ("rulechg" in ASCII).
    static let lockKey: Int64 = 0x72_756c_6563_6867

    private struct StoredFile: Codable {
        var path: String
        var contents: String
    }

    private static func insert(_ change: Change, files: [RulesetFile], connection: PostgresConnection) throws {
        let stored = try PostgresJSON(encoding: files.map { StoredFile(path: $0.path, contents: $0.contents) })
        try connection.execute(
            """
            INSERT INTO rule_changes (change_id, version, previous_version, status, proposed_by, proposed_at, decided_by,
                                      decided_at, note, git_commit, files, diff, tests)
            VALUES (\(change.changeId), \(change.version), \(change.previousVersion), \(change.status), \(change.proposedBy),
                    \(change.proposedAt), \(change.decidedBy), \(change.decidedAt), \(change.note), \(change.gitCommit),
                    \(stored), \(try PostgresJSON(encoding: change.diff)), \(try PostgresJSON(encoding: change.tests)))
            """)
    }

    private static func change(_ row: PostgresRow) throws -> Change {
        Change(
            changeId: try row.decode("change_id"), version: try row.decode("version"),
            previousVersion: try row.decode("previous_version"), status: try row.decode("status"),
            proposedBy: try row.decode("proposed_by"), proposedAt: try row.decode("proposed_at"),
            decidedBy: try row.decode("decided_by"), decidedAt: try row.decode("decided_at"),
            note: try row.decode("note"),
            gitCommit: try row.decode("git_commit"),
            diff: try row.decode("diff", as: PostgresJSON.self).decode([RuleChange].self),
            tests: try row.decode("tests", as: PostgresJSON.self).decode(Change.Tests.self))
    }

    /// The audit entry of a step: who, both versions, the git commit and the rule-level diff.
    private static func audit(
        _ change: Change, action: String, actor: String, person: String, trigger: String, at time: Date,
        connection: PostgresConnection
    ) throws {
        var details = RulesAudit.details(
            person: person, previous: change.previousVersion, version: change.version, gitCommit: change.gitCommit,
            diff: change.diff, trigger: trigger)
        details["changeId"] = change.changeId.uuidString.lowercased()
        if let note = change.note { details["note"] = note }
        try AuditLog.append(
            actor: actor, action: action, subject: "ruleset:\(change.version)", details: details, at: time,
            connection: connection)
    }
}
