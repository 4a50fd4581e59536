import Foundation
import IssuerdCore
import IssuerdPostgres

/// Reads and writes the `outbox` table (sql/0002): enqueue inside the caller's transaction,
/// claim due messages under a lease, record the outcome.
///
/// The claim is `FOR UPDATE SKIP LOCKED` inside one short transaction that also pushes
/// `next_attempt_at` past the lease and counts the try, so several dispatchers (threads or
/// instances) never take the same message, and no transaction stays open while a message is
/// delivered. A dispatcher killed between delivering and marking leaves the message pending:
/// once the lease ends it is delivered again (at-least-once; receivers drop duplicates by the
/// `Idempotency-Key` header, the message's dedup key).
package enum OutboxStore {
    /// A message taken for delivery.
    package struct Claimed: Sendable {
        package var id: Int64
        package var kind: OutboxKind
        package var dedupKey: String
        package var payload: PostgresJSON
        /// Tries including this one.
        package var attempts: Int
        /// The `traceparent` of the request that enqueued it, carried by its delivery.
        package var traceparent: String? = nil

        /// Creates the value from every stored property.
        package init(
            id: Int64, kind: OutboxKind, dedupKey: String, payload: PostgresJSON, attempts: Int,
            traceparent: String? = nil
        ) {
            self.id = id
            self.kind = kind
            self.dedupKey = dedupKey
            self.payload = payload
            self.attempts = attempts
            self.traceparent = traceparent
        }
    }

    /// Enqueues a message within the caller's transaction; a second message with the same
    /// dedup key is dropped (the first one stands). The trace of the request this thread works
    /// for (``TraceContext/current``) is stored with it, for its delivery.
    ///
    /// - Returns: Whether a row was inserted.
    @discardableResult
    package static func enqueue(
        kind: OutboxKind, dedupKey: String, payload: some Encodable, connection: PostgresConnection
    ) throws -> Bool {
        let json = try PostgresJSON(encoding: payload)
        return try connection.execute(
            """
            INSERT INTO outbox (kind, dedup_key, payload, traceparent)
            VALUES (\(kind.rawValue), \(dedupKey), \(json), \(TraceContext.current?.traceparent))
            ON CONFLICT (dedup_key) DO NOTHING
            """) == 1
    }

    /// A message to enqueue, its payload already encoded.
    package struct Message: Sendable {
        package var kind: OutboxKind
        package var dedupKey: String
        package var payload: PostgresJSON

        package init(kind: OutboxKind, dedupKey: String, payload: some Encodable) throws {
            self.kind = kind
            self.dedupKey = dedupKey
            self.payload = try PostgresJSON(encoding: payload)
        }
    }

    /// Enqueues `messages` in one statement within the caller's transaction, in order (they are
    /// due in that order); as ``enqueue(kind:dedupKey:payload:connection:)``, a dedup key already
    /// queued drops its message.
    /// - Returns: How many were inserted.
    @discardableResult
    package static func enqueue(_ messages: [Message], connection: PostgresConnection) throws -> Int {
        guard !messages.isEmpty else { return 0 }
        return try connection.execute(
            """
            INSERT INTO outbox (kind, dedup_key, payload, traceparent)
            SELECT m.kind, m.dedup_key, m.payload::jsonb, \(TraceContext.current?.traceparent)
            FROM unnest(\(messages.map(\.kind.rawValue))::text[], \(messages.map(\.dedupKey))::text[],
                        \(messages.map(\.payload.rawJSON))::text[]) WITH ORDINALITY AS m(kind, dedup_key, payload, n)
            ORDER BY m.n
            ON CONFLICT (dedup_key) DO NOTHING
            """)
    }

    /// Claims up to `limit` due messages of `kinds` and reserves them for `lease`.
    package static func claim(
        limit: Int, lease: Duration, kinds: [OutboxKind], connection: PostgresConnection
    ) throws -> [Claimed] {
        let leaseSeconds = lease.timeInterval
        let rows = try connection.query(
            """
            UPDATE outbox SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => \(leaseSeconds))
            WHERE id IN (
                SELECT id FROM outbox
                WHERE status = 'pending' AND next_attempt_at <= now() AND kind = ANY(\(kinds.map(\.rawValue)))
                ORDER BY next_attempt_at, id LIMIT \(limit)
                FOR UPDATE SKIP LOCKED)
            RETURNING id, kind, dedup_key, payload, attempts, traceparent
            """)
        return try rows.compactMap { row in
            guard let kind = OutboxKind(rawValue: try row.decode("kind")) else { return nil }
            return Claimed(
                id: try row.decode("id"), kind: kind, dedupKey: try row.decode("dedup_key"),
                payload: try row.decode("payload"),
                attempts: try row.decode("attempts"), traceparent: try row.decode("traceparent"))
        }
    }

    /// Gives claimed messages back untried: due now, and the try they were counted for undone.
    package static func release(_ ids: [Int64], connection: PostgresConnection) throws {
        guard !ids.isEmpty else { return }
        try connection.execute(
            """
            UPDATE outbox SET next_attempt_at = now(), attempts = greatest(attempts - 1, 0)
            WHERE id = ANY(\(ids.map(String.init))::bigint[]) AND status = 'pending'
            """)
    }

    /// Records a delivery. Only a still-pending message changes (an admin may not have touched
    /// it meanwhile, but a delivered one stays delivered).
    package static func markDelivered(_ id: Int64, connection: PostgresConnection) throws {
        try connection.execute(
            "UPDATE outbox SET status = 'delivered', delivered_at = now(), last_error = NULL WHERE id = \(id) AND status = 'pending'"
        )
    }

    /// Records a failed try: retry after `delay` seconds, or dead-letter when `delay` is nil.
    package static func markFailed(
        _ id: Int64, error: String, retryAfter delay: Double?, connection: PostgresConnection
    ) throws {
        let summary = String(error.prefix(300))
        if let delay {
            try connection.execute(
                """
                UPDATE outbox SET last_error = \(summary), next_attempt_at = now() + make_interval(secs => \(delay))
                WHERE id = \(id) AND status = 'pending'
                """)
        } else {
            try connection.execute(
                "UPDATE outbox SET status = 'dead', last_error = \(summary) WHERE id = \(id) AND status = 'pending'")
        }
    }

    /// How long the oldest pending message of each kind has waited, in seconds (only kinds with
    /// one pending).
    package static func oldestPendingAges(connection: PostgresConnection) throws -> [(kind: String, seconds: Double)] {
        try connection.query(
            """
            SELECT kind, extract(epoch FROM now() - min(created_at))::float8 AS age
            FROM outbox WHERE status = 'pending' GROUP BY kind
            """
        ).map { (try $0.decode("kind"), try $0.decode("age", as: Double.self)) }
    }

    /// Message counts by kind and status.
    package static func counts(connection: PostgresConnection) throws -> [(kind: String, status: String, count: Int)] {
        try connection.query(
            "SELECT kind, status, count(*)::bigint AS n FROM outbox GROUP BY kind, status ORDER BY kind, status"
        ).map {
            (try $0.decode("kind"), try $0.decode("status"), Int(try $0.decode("n", as: Int64.self)))
        }
    }
}
