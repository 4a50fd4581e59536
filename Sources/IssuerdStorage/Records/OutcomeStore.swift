import Foundation
import IssuerdCore
import IssuerdPostgres

/// Outcomes of attempts (`attempt_outcomes`, sql/0026): every report kept, one current per
/// attempt, each recorded report in the hash-chained audit log with it.
package enum OutcomeStore {
    /// The most reports one call records (the API's batch limit; the CSV import's chunk).
    package static let batchLimit = 1000

    /// What became of one report.
    package enum Applied: Sendable, Equatable {
        /// Kept, and in the audit log.
        case recorded
        /// The same report (outcome, source, confirmation, amount, note, and time when given) was
        /// already kept for its attempt: nothing written.
        case unchanged
        /// Its attempt or token is unknown.
        case refused(OutcomeInputError)
    }

    /// One kept report, as `GET /v1/admin/attempts/{attemptId}` shows it.
    package struct Stored: Sendable, Equatable {
        package var id: Int64
        package var label: String
        package var source: String
        package var confirmed: Bool
        package var reportedAt: Date
        package var amountLost: Int64?
        package var currency: String?
        package var note: String
        package var tokenReference: String?
        package var recordedBy: String
        package var recordedAt: Date
        package var isCurrent: Bool
    }

    /// Records `reports` in order within the caller's open transaction, each whole or not at
    /// all (its row, the current mark and its audit entry). The attempts' advisory locks are
    /// taken first, in one order, so concurrent batches about the same attempts wait for each
    /// other instead of both recording one report.
    ///
    /// - Returns: One ``Applied`` per report, in order.
    package static func record(
        _ reports: [OutcomeReport], actor: String, now: Date, connection: PostgresConnection
    ) throws -> [Applied] {
        let attempts = try resolve(reports, connection: connection)
        let ids = Set(attempts.compactMap { try? $0.get().attemptID.lowercasedString }).sorted()
        if !ids.isEmpty {
            try connection.execute(
                """
                SELECT count(pg_advisory_xact_lock(hashtextextended('outcome:' || id, 0)))
                FROM unnest(\(ids)::text[]) AS id
                """)
        }
        var applied: [Applied] = []
        applied.reserveCapacity(reports.count)
        for (report, attempt) in zip(reports, attempts) {
            switch attempt {
            case .failure(let error): applied.append(.refused(error))
            case .success(let target):
                applied.append(
                    try insert(report, attempt: target, actor: actor, now: now, connection: connection)
                        ? .recorded : .unchanged)
            }
        }
        return applied
    }

    /// Records a network signal (MDES Notify Suspicious Events, a token deleted for fraud) as a
    /// `network` fraud report on the attempt that created `tokenReference`, within the caller's
    /// transaction; a token issuerd did not create through an attempt is skipped.
    ///
    /// - Parameters:
    ///   - confirmed: Whether it counts as confirmed fraud (``OutcomeSettings/networkConfirms``).
    ///   - note: What the network said, e.g. `MDES suspicious events: ...`.
    /// - Returns: Whether a report was recorded.
    @discardableResult
    package static func recordNetworkSignal(
        tokenReference: String, note: String, at time: Date, confirmed: Bool, actor: String, now: Date,
        connection: PostgresConnection
    ) throws -> Bool {
        let report = OutcomeReport(
            subject: .token(tokenReference), label: .fraud, source: .network, confirmed: confirmed,
            reportedAt: min(time, now), note: String(note.prefix(OutcomeReport.noteLimit)))
        return try record([report], actor: actor, now: now, connection: connection) == [.recorded]
    }

    /// Every report kept for `attemptID`, newest first by report time.
    package static func history(of attemptID: UUID, connection: PostgresConnection) throws -> [Stored] {
        try connection.query(
            """
            SELECT id, outcome, source, confirmed, reported_at, amount_lost, currency, note, token_reference,
                   recorded_by, recorded_at, is_current
            FROM attempt_outcomes WHERE attempt_id = \(attemptID)
            ORDER BY reported_at DESC, id DESC
            """
        ).map { row in
            Stored(
                id: try row.decode("id"), label: try row.decode("outcome"), source: try row.decode("source"),
                confirmed: try row.decode("confirmed"), reportedAt: try row.decode("reported_at"),
                amountLost: try row.decode("amount_lost"), currency: try row.decode("currency"),
                note: try row.decode("note"), tokenReference: try row.decode("token_reference"),
                recordedBy: try row.decode("recorded_by"), recordedAt: try row.decode("recorded_at"),
                isCurrent: try row.decode("is_current"))
        }
    }

    /// The attempt a report is about, and the token it came through.
    private struct Target {
        var attemptID: UUID
        var tokenReference: String?
    }

    /// Each report's attempt, in two queries for the whole batch; unknown ids are refused.
    private static func resolve(
        _ reports: [OutcomeReport], connection: PostgresConnection
    ) throws -> [Result<Target, OutcomeInputError>] {
        var attemptIDs: [String] = []
        var references: [String] = []
        for report in reports {
            switch report.subject {
            case .attempt(let id): attemptIDs.append(id.lowercasedString)
            case .token(let reference): references.append(reference)
            }
        }
        var tokens: [String: UUID] = [:]
        if !references.isEmpty {
            for row in try connection.query(
                """
                SELECT token_reference, attempt_id FROM tokens
                WHERE token_reference = ANY(\(references)::text[]) AND attempt_id IS NOT NULL
                """)
            {
                tokens[try row.decode("token_reference")] = try row.decode("attempt_id", as: UUID.self)
            }
        }
        var known = Set(tokens.values)
        if !attemptIDs.isEmpty {
            for row in try connection.query(
                "SELECT attempt_id FROM provisioning_attempts WHERE attempt_id = ANY(\(attemptIDs)::uuid[])")
            {
                known.insert(try row.decode("attempt_id", as: UUID.self))
            }
        }
        return reports.map { report in
            switch report.subject {
            case .attempt(let id):
                guard known.contains(id) else {
                    return .failure(
                        OutcomeInputError(
                            code: "unknown_attempt", field: "attemptId",
                            message: "no attempt \(id.lowercasedString)"))
                }
                return .success(Target(attemptID: id))
            case .token(let reference):
                guard let id = tokens[reference] else {
                    return .failure(
                        OutcomeInputError(
                            code: "unknown_token", field: "tokenReference",
                            message: "no token \(reference) created by a recorded attempt"))
                }
                return .success(Target(attemptID: id, tokenReference: reference))
            }
        }
    }

    /// Inserts the report unless the same one is kept, marks the attempt's current report and
    /// appends the audit entry. Returns whether it was recorded.
    private static func insert(
        _ report: OutcomeReport, attempt: Target, actor: String, now: Date, connection: PostgresConnection
    ) throws -> Bool {
        let reportedAt = report.reportedAt ?? now
        let inserted = try connection.query(
            """
            INSERT INTO attempt_outcomes (attempt_id, outcome, source, confirmed, reported_at, amount_lost, currency,
                                          note, token_reference, recorded_by, recorded_at, attempt_created_at,
                                          attempt_flow, attempt_hits)
            SELECT \(attempt.attemptID), \(report.label.rawValue), \(report.source.rawValue), \(report.confirmed),
                   \(reportedAt), \(report.amountLost), \(report.currency), \(report.note), \(attempt.tokenReference),
                   \(actor), \(now), a.created_at, a.flow, a.hits
            FROM provisioning_attempts a WHERE a.attempt_id = \(attempt.attemptID) AND NOT EXISTS (
                SELECT 1 FROM attempt_outcomes
                WHERE attempt_id = \(attempt.attemptID) AND outcome = \(report.label.rawValue)
                  AND source = \(report.source.rawValue) AND confirmed = \(report.confirmed)
                  AND amount_lost IS NOT DISTINCT FROM \(report.amountLost)
                  AND currency IS NOT DISTINCT FROM \(report.currency) AND note = \(report.note)
                  AND (\(report.reportedAt)::timestamptz IS NULL OR reported_at = \(report.reportedAt)))
            RETURNING id
            """
        ).first
        guard let inserted else { return false }
        let id: Int64 = try inserted.decode("id")
        try connection.execute(
            "UPDATE attempt_outcomes SET is_current = false WHERE attempt_id = \(attempt.attemptID) AND is_current")
        try connection.execute(
            """
            UPDATE attempt_outcomes SET is_current = true WHERE id = (
                SELECT id FROM attempt_outcomes WHERE attempt_id = \(attempt.attemptID)
                ORDER BY confirmed DESC, reported_at DESC, id DESC LIMIT 1)
            """)
        var details = [
            "outcomeId": String(id), "outcome": report.label.rawValue, "source": report.source.rawValue,
            "confirmed": String(report.confirmed), "reportedAt": RFC3339.string(reportedAt),
        ]
        if let amount = report.amountLost, let currency = report.currency {
            details["amountLost"] = String(amount)
            details["currency"] = currency
        }
        if let reference = attempt.tokenReference { details["tokenReference"] = reference }
        if !report.note.isEmpty { details["note"] = report.note }
        try AuditLog.append(
            actor: actor, action: "outcome.recorded", subject: "attempt:\(attempt.attemptID.lowercasedString)",
            details: details, at: now, connection: connection)
        return true
    }
}
