import Foundation
import IssuerdCore
import IssuerdPostgres

/// The analysts' review queue (`review_cases`, sql/0027): orange decisions, and yellow ones whose
/// step-up was not completed within a set time, one case per attempt, queued to the owners of the
/// rules that decided it (`owner` in the rule files; built-in checks are `issuerd`'s).
///
/// Cases enter when the queue is read (``catchUp(owners:stepUpWait:now:connection:)``), from where
/// the last look stopped; taking and closing a case are single conditional UPDATEs, so any
/// number of instances share one queue and one analyst holds a case at a time.
package enum ReviewQueue {
    /// One case as the queue lists it.
    package struct Case: Sendable, Equatable {
        package var caseID: Int64
        package var attemptID: UUID
        package var reason: String
        package var owners: [String]
        package var status: String
        package var openedAt: Date
        package var assignee: String?
        package var assignedAt: Date?
        package var closedAt: Date?
        package var closedBy: String?
        package var outcome: String?
        package var note: String?
        package var flow: String
        package var cardID: String?
        package var customerID: String?
        package var lastFour: String?
    }

    /// Who owns what is not a rule of the ruleset (request checks, invariants).
    package static let builtInOwner = "issuerd"
    /// Decisions younger than this are left for the next look, so one committing late is not missed.
    static let settle: TimeInterval = 5

    /// Opens the cases of the decisions made since the last look: orange ones, and yellow ones
    /// older than `stepUpWait` whose step-up was not completed. Idempotent across instances (one
    /// case per attempt).
    ///
    /// - Parameter owners: Each rule id's owner, from the serving ruleset.
    package static func catchUp(
        owners: [String: String], stepUpWait: TimeInterval, now: Date, connection: PostgresConnection
    ) throws {
        let ruleIDs = Array(owners.keys)
        let ruleOwners = ruleIDs.map { owners[$0]! }
        let orangeUntil = now.addingTimeInterval(-settle)
        let yellowUntil = now.addingTimeInterval(-max(stepUpWait, settle))
        try connection.transaction { connection in
            guard
                let state = try connection.query(
                    "SELECT orange_until, yellow_until FROM review_queue_state FOR UPDATE SKIP LOCKED"
                ).first
            else { return }  // another instance is looking right now
            let orangeFrom: Date = try state.decode("orange_until")
            let yellowFrom: Date = try state.decode("yellow_until")
            try connection.execute(
                """
                INSERT INTO review_cases (attempt_id, reason, owners, opened_at)
                SELECT a.attempt_id, CASE a.flow WHEN 'orange' THEN 'orange' ELSE 'step_up_not_completed' END,
                       coalesce((SELECT array_agg(DISTINCT o.owner ORDER BY o.owner) FROM (
                                     SELECT coalesce(r.owner, \(builtInOwner)::text) AS owner
                                     FROM jsonb_array_elements(CASE WHEN jsonb_typeof(a.hits) = 'array' THEN a.hits ELSE '[]'::jsonb END) h
                                     LEFT JOIN unnest(\(ruleIDs)::text[], \(ruleOwners)::text[]) AS r(rule_id, owner)
                                            ON r.rule_id = coalesce(h ->> 'rule', h ->> 'ruleId')
                                     WHERE jsonb_typeof(h) = 'object' AND coalesce(h ->> 'mode', 'live') = 'live'
                                       AND h ->> 'outcome' = a.flow) o),
                                ARRAY[\(builtInOwner)::text]),
                       CASE a.flow WHEN 'orange' THEN a.created_at ELSE a.created_at + make_interval(secs => \(stepUpWait)) END
                FROM provisioning_attempts a
                WHERE (a.flow = 'orange' AND a.created_at >= \(orangeFrom) AND a.created_at < \(orangeUntil))
                   OR (a.flow = 'yellow' AND a.created_at >= \(yellowFrom) AND a.created_at < \(yellowUntil)
                       AND NOT EXISTS (
                           SELECT 1 FROM tokens t WHERE t.attempt_id = a.attempt_id
                             AND (t.status IN ('active', 'suspended')
                                  OR EXISTS (SELECT 1 FROM token_events e
                                             WHERE e.token_reference = t.token_reference AND e.event = 'activated'))))
                ON CONFLICT (attempt_id) DO NOTHING
                """)
            try connection.execute(
                """
                UPDATE review_queue_state SET orange_until = greatest(orange_until, \(orangeUntil)),
                                              yellow_until = greatest(yellow_until, \(yellowUntil))
                """)
        }
    }

    /// Which cases to list.
    package enum Queue: Sendable, Equatable {
        case all
        /// Held by this analyst.
        case mine(String)
        /// Decided by a rule of this owner.
        case owner(String)
    }

    /// The cases of `queue` with `status`, oldest first, at most `limit`.
    package static func list(
        _ queue: Queue, status: String, limit: Int, connection: PostgresConnection
    ) throws -> [Case] {
        var mine: String?
        var owner: String?
        switch queue {
        case .all: break
        case .mine(let actor): mine = actor
        case .owner(let name): owner = name
        }
        return try connection.query(
            """
            \(unsafeSQL: selectSQL)
            WHERE c.status = \(status)
              AND (\(mine)::text IS NULL OR c.assignee = \(mine))
              AND (\(owner)::text IS NULL OR c.owners @> ARRAY[\(owner)::text])
            ORDER BY c.opened_at, c.case_id LIMIT \(limit)
            """
        ).map(decodeCase)
    }

    /// Open cases per owner, and those held by `actor`.
    package static func openCounts(
        actor: String, connection: PostgresConnection
    ) throws -> (owners: [(String, Int)], mine: Int) {
        let owners = try connection.query(
            """
            SELECT o AS owner, count(*)::bigint AS n FROM review_cases c, unnest(c.owners) o
            WHERE c.status = 'open' GROUP BY o ORDER BY o
            """
        ).map { (try $0.decode("owner", as: String.self), Int(try $0.decode("n", as: Int64.self))) }
        let mine =
            try connection.query(
                "SELECT count(*)::bigint AS n FROM review_cases WHERE status = 'open' AND assignee = \(actor)"
            ).first?.decode("n", as: Int64.self) ?? 0
        return (owners, Int(mine))
    }

    /// One case.
    package static func find(_ caseID: Int64, connection: PostgresConnection) throws -> Case? {
        try connection.query("\(unsafeSQL: selectSQL) WHERE c.case_id = \(caseID)").first.map(decodeCase)
    }

    /// Gives the case to `actor`: one conditional UPDATE, so of two analysts (on any instances)
    /// taking it at once, one gets it. Taking a case one holds already is allowed.
    ///
    /// - Throws: ``Refusal``: `case_not_found`, `case_closed`, or `case_held` (another analyst holds it).
    package static func assign(
        _ caseID: Int64, to actor: String, now: Date, connection: PostgresConnection
    ) throws
        -> Case
    {
        let updated = try connection.execute(
            """
            UPDATE review_cases SET assignee = \(actor), assigned_at = \(now)
            WHERE case_id = \(caseID) AND status = 'open' AND (assignee IS NULL OR assignee = \(actor))
            """)
        guard updated == 1, let taken = try find(caseID, connection: connection) else {
            throw try refusal(caseID, actor: actor, connection: connection)
        }
        try AuditLog.append(
            actor: actor, action: "case.assigned", subject: "case:\(caseID)",
            details: ["attemptId": taken.attemptID.lowercasedString], at: now, connection: connection)
        return taken
    }

    /// Closes the case with the analyst's outcome and note, within the caller's transaction
    /// (the outcome itself is recorded by the caller through ``OutcomeStore``).
    ///
    /// - Throws: ``Refusal``: `case_not_found`, `case_closed`, or `case_held` (another analyst holds it).
    package static func close(
        _ caseID: Int64, by actor: String, outcome: OutcomeReport.Label, note: String, now: Date,
        connection: PostgresConnection
    ) throws -> Case {
        let updated = try connection.execute(
            """
            UPDATE review_cases SET status = 'closed', closed_at = \(now), closed_by = \(actor),
                   outcome = \(outcome.rawValue), note = \(note), assignee = coalesce(assignee, \(actor)),
                   assigned_at = coalesce(assigned_at, \(now))
            WHERE case_id = \(caseID) AND status = 'open' AND (assignee IS NULL OR assignee = \(actor))
            """)
        guard updated == 1, let closed = try find(caseID, connection: connection) else {
            throw try refusal(caseID, actor: actor, connection: connection)
        }
        var details = ["attemptId": closed.attemptID.lowercasedString, "outcome": outcome.rawValue]
        if !note.isEmpty { details["note"] = note }
        try AuditLog.append(
            actor: actor, action: "case.closed", subject: "case:\(caseID)", details: details, at: now,
            connection: connection)
        return closed
    }

    /// Why the conditional UPDATE touched nothing.
    private static func refusal(_ caseID: Int64, actor: String, connection: PostgresConnection) throws -> Refusal {
        guard let row = try find(caseID, connection: connection) else { return notFound(caseID) }
        if row.status == "closed" { return closed(caseID) }
        return Refusal(.conflict, code: "case_held", message: "case \(caseID) is held by another analyst")
    }

    /// `case_not_found`.
    package static func notFound(_ caseID: Int64) -> Refusal {
        Refusal(.notFound, code: "case_not_found", message: "no case \(caseID)")
    }

    /// `case_closed`.
    package static func closed(_ caseID: Int64) -> Refusal {
        Refusal(.conflict, code: "case_closed", message: "case \(caseID) is closed")
    }

    private static let selectSQL = """
        SELECT c.case_id, c.attempt_id, c.reason, c.owners, c.status, c.opened_at, c.assignee, c.assigned_at,
               c.closed_at, c.closed_by, c.outcome, c.note, a.flow, a.card_id, a.customer_id, k.last_four
        FROM review_cases c
        JOIN provisioning_attempts a ON a.attempt_id = c.attempt_id
        LEFT JOIN cards k ON k.card_id = a.card_id
        """

    private static func decodeCase(_ row: PostgresRow) throws -> Case {
        Case(
            caseID: try row.decode("case_id"), attemptID: try row.decode("attempt_id"),
            reason: try row.decode("reason"),
            owners: try row.decode("owners"), status: try row.decode("status"), openedAt: try row.decode("opened_at"),
            assignee: try row.decode("assignee"), assignedAt: try row.decode("assigned_at"),
            closedAt: try row.decode("closed_at"), closedBy: try row.decode("closed_by"),
            outcome: try row.decode("outcome"), note: try row.decode("note"), flow: try row.decode("flow"),
            cardID: try row.decode("card_id"), customerID: try row.decode("customer_id"),
            lastFour: try row.decode("last_four"))
    }
}
