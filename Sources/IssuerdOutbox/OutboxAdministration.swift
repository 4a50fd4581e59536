import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdStorage

/// The operator's view of the outbox (`GET /v1/admin/outbox`) and the dead-letter re-queue.
///
/// Views show what an operator needs to act (kind, state, tries, last error, the masked
/// destination or the TSP action) and never a code or a clear destination: those exist only
/// sealed in the payload.
package enum OutboxAdministration {
    /// One message as the admin API shows it.
    package struct MessageView: Codable, Sendable, Equatable {
        package var messageId: String
        package var kind: String
        package var state: String
        package var tries: Int
        package var nextAttemptAt: String?
        package var lastError: String?
        package var createdAt: String
        package var deliveredAt: String?
        package var dedupKey: String
        package var method: String?
        package var destination: String?
        package var challengeId: String?
        package var tokenReference: String?
        package var action: String?
    }

    /// Counts by kind and status.
    package struct Count: Codable, Sendable, Equatable {
        package var kind: String
        package var status: String
        package var count: Int
    }

    /// The whole `GET /v1/admin/outbox` answer.
    package struct Status: Codable, Sendable, Equatable {
        /// Pending messages (due or waiting for a retry).
        package var backlog: Int
        package var counts: [Count]
        /// Seconds since the oldest pending message was created; nil when none is pending.
        package var oldestPendingAgeSeconds: Int?
        /// Pending messages whose last try failed (they will be retried).
        package var failing: [MessageView]
        package var deadLetters: [MessageView]
    }

    package static let listLimit = 50
    private static let columns =
        "id, kind, status, attempts, next_attempt_at, last_error, created_at, delivered_at, dedup_key, payload"

    /// The backlog, the failing messages and the dead letters (newest first, at most 50 each),
    /// of one kind of message when `kind` is given.
    package static func status(now: Date, kind: OutboxKind? = nil, connection: PostgresConnection) throws -> Status {
        let kinds = kind.map { [$0.rawValue] } ?? OutboxKind.allCases.map(\.rawValue)
        let counts = try OutboxStore.counts(connection: connection).filter { kinds.contains($0.kind) }.map {
            Count(kind: $0.kind, status: $0.status, count: $0.count)
        }
        let oldest = try connection.query(
            "SELECT min(created_at) AS oldest FROM outbox WHERE status = 'pending' AND kind = ANY(\(kinds))"
        ).first?.decode("oldest", as: Date?.self)
        let failing = try connection.query(
            """
            SELECT \(unsafeSQL: columns) FROM outbox
            WHERE status = 'pending' AND last_error IS NOT NULL AND kind = ANY(\(kinds))
            ORDER BY created_at DESC LIMIT \(listLimit)
            """
        ).map(view)
        let dead = try connection.query(
            """
            SELECT \(unsafeSQL: columns) FROM outbox WHERE status = 'dead' AND kind = ANY(\(kinds))
            ORDER BY created_at DESC LIMIT \(listLimit)
            """
        ).map(view)
        return Status(
            backlog: counts.filter { $0.status == "pending" }.reduce(0) { $0 + $1.count }, counts: counts,
            oldestPendingAgeSeconds: oldest.map { max(0, Int(now.timeIntervalSince($0))) }, failing: failing,
            deadLetters: dead)
    }

    /// Puts a dead letter back in the queue with its tries reset, audited, in one transaction.
    ///
    /// - Throws: 404 unknown message, 409 the message is not dead-lettered.
    package static func requeue(
        _ messageID: String, actor: String, now: Date, connection: PostgresConnection
    ) throws -> MessageView {
        guard messageID.utf8.count <= 19, let id = Int64(messageID), id > 0,
            let row = try connection.query("SELECT status FROM outbox WHERE id = \(id) FOR UPDATE").first
        else { throw Self.messageNotFound() }
        guard try row.decode("status", as: String.self) == "dead" else {
            throw Refusal.invalidState("the message is not dead-lettered")
        }
        try connection.execute(
            "UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = now() WHERE id = \(id)")
        try AuditLog.append(
            actor: actor, action: "outbox.requeued", subject: "outbox:\(id)", details: [:], at: now,
            connection: connection)
        guard let updated = try connection.query("SELECT \(unsafeSQL: columns) FROM outbox WHERE id = \(id)").first
        else {
            throw Self.messageNotFound()
        }
        return try view(updated)
    }

    private static func view(_ row: PostgresRow) throws -> MessageView {
        let payload: PostgresJSON = try row.decode("payload")
        let delivery = try? payload.decode(StepUpDeliveryPayload.self)
        let notification = try? payload.decode(TSPNotificationPayload.self)
        let status: String = try row.decode("status")
        let lastError: String? = try row.decode("last_error")
        return MessageView(
            messageId: String(try row.decode("id", as: Int64.self)), kind: try row.decode("kind"),
            state: status == "pending" && lastError != nil ? "failing" : status, tries: try row.decode("attempts"),
            nextAttemptAt: status == "pending" ? RFC3339.string(try row.decode("next_attempt_at")) : nil,
            lastError: lastError,
            createdAt: RFC3339.string(try row.decode("created_at")),
            deliveredAt: try row.decode("delivered_at", as: Date?.self).map(RFC3339.string),
            dedupKey: try row.decode("dedup_key"),
            method: delivery?.method, destination: delivery?.destinationMasked, challengeId: delivery?.challengeId,
            tokenReference: delivery?.tokenReference ?? notification?.tokenReference, action: notification?.action)
    }

    /// 404 `message_not_found`.
    package static func messageNotFound(file: String = #fileID, line: Int = #line) -> Refusal {
        Refusal(.notFound, code: "message_not_found", message: "no such outbox message", file: file, line: line)
    }
}
