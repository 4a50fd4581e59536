import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import Synchronization

/// An answer as the store keeps it, in plain values: the status, the headers its handler set
/// (e.g. `Location`), and the body (JSON). A replayed answer also carries the body's content
/// type and `Idempotent-Replayed: true`, added by whoever turns it into a response.
package struct StoredAnswer: Sendable, Equatable {
    package var status: Int
    package var headers: [String: String]
    package var body: [UInt8]

    /// Creates the value from every stored property.
    package init(status: Int, headers: [String: String] = [:], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The headers as stored: name, value, name, value, … (names sorted).
    package var flattenedHeaders: [String] {
        headers.keys.sorted().flatMap { [$0, headers[$0]!] }
    }

    /// Headers read back from ``flattenedHeaders``'s form (a trailing odd name is dropped).
    package static func headers(flattened: [String]) -> [String: String] {
        var headers: [String: String] = [:]
        var index = 0
        while index + 1 < flattened.count {
            headers[flattened[index]] = flattened[index + 1]
            index += 2
        }
        return headers
    }
}

/// `Idempotency-Key` (docs/openapi.yaml): the same key and body return the stored response; the same key
/// with another body is 409.
///
/// The key is claimed (a row with status 0) before the work runs, so a concurrent retry gets
/// 409 instead of running the work twice; the response replaces the claim afterwards, and a
/// failure removes the claim so the caller can retry. Responses of 5xx are not stored: a
/// retry after an outage should do the work.
///
/// Two faults leave a claim behind (scripts/reliability found both): an instance killed while
/// it held one, and PostgreSQL going away after the work committed, so that neither the answer
/// nor the removal could be written. A claim older than ``claimExpiry`` is therefore taken over
/// by the next retry, and work that can (provisioning, see ``IdempotencyClaim``) stores its
/// answer in its own transaction, so a commit whose acknowledgement was lost is replayed to the
/// retry instead of being done twice.
package struct IdempotencyStore: Sendable {
    package static let headerName = "Idempotency-Key"
    /// How long a claim without an answer blocks retries. Far longer than any request holds one
    /// (pool wait 2 s by default, statements of milliseconds, abandoned after
    /// `ISSUERD_DB_STATEMENT_TIMEOUT`, 5 s by default), short enough for a client's retry.
    package static let claimExpiry: Duration = .seconds(15)

    package let database: PostgresPool

    /// Creates the value from every stored property.
    package init(database: PostgresPool) {
        self.database = database
    }

    /// The code of a key used with another request, or still being processed.
    package static let keyReusedCode = "idempotency_key_reused"

    /// Runs `work` at most once per `(scope, key)`, handing it the claim (nil without a key) so
    /// that it can store its answer in its own transaction (``IdempotencyClaim/recording(_:)``).
    ///
    /// - Parameters:
    ///   - key: The request's `Idempotency-Key`, if it sent one.
    ///   - request: What identifies the request (method, path, body): the same key with other
    ///     bytes is refused.
    ///   - scope: The caller and operation, e.g. `app:<customer>:provision:<card>`, so keys of
    ///     different callers never collide.
    ///   - stored: The answer to keep for a result of `work`.
    ///   - refused: The answer to keep for an error `work` threw, nil when the error must not be
    ///     kept (a server fault or a rate limit: the retry should do the work).
    ///   - replayed: The result to give for an answer read back.
    package func run<Answer>(
        key: String?, request: @escaping () -> [UInt8], scope: String, stored: @escaping (Answer) -> StoredAnswer,
        refused: @escaping (any Error) -> StoredAnswer?, replayed: @escaping (StoredAnswer) -> Answer,
        _ work: (IdempotencyClaim?) throws -> Answer
    ) throws -> Answer {
        try run(
            Call(key: key, request: request, scope: scope, stored: stored, refused: refused, replayed: replayed),
            rereads: 0, work)
    }

    /// How often one request reads the key's row again after another request changed it under
    /// it (released, answered, or took it over): each needs another party's commit in between.
    private static let maximumRereads = 3

    private struct Call<Answer> {
        let key: String?
        let request: () -> [UInt8]
        let scope: String
        let stored: (Answer) -> StoredAnswer
        let refused: (any Error) -> StoredAnswer?
        let replayed: (StoredAnswer) -> Answer
    }

    private func run<Answer>(
        _ call: Call<Answer>, rereads: Int, _ work: (IdempotencyClaim?) throws -> Answer
    ) throws -> Answer {
        let scope = call.scope
        guard let key = call.key else { return try work(nil) }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw Refusal.invalidRequest("Idempotency-Key must be 1 to 255 visible ASCII characters")
        }
        let requestHash = SHA256.hash(call.request())
        let claim = IdempotencyClaim(scope: scope, key: key, token: UUID.random())
        var claimed = try database.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO idempotency_keys (scope, key, request_hash, status, claim_token)
                VALUES (\(scope), \(key), \(requestHash), 0, \(claim.token)) ON CONFLICT DO NOTHING
                """) == 1
        }
        if !claimed {
            let expiry = Self.claimExpiry.timeInterval
            let row = try database.withConnection { connection in
                try connection.query(
                    """
                    SELECT request_hash, status, response_headers, response_body,
                           created_at < now() - make_interval(secs => \(expiry)) AS expired
                    FROM idempotency_keys WHERE scope = \(scope) AND key = \(key)
                    """
                ).first
            }
            // The claim was just released: claim it again.
            guard let row else {
                guard rereads < Self.maximumRereads else { throw IdempotencyClaim.takenOver() }
                return try run(call, rereads: rereads + 1, work)
            }
            guard try row.decode("request_hash", as: [UInt8].self) == requestHash else {
                throw Refusal(
                    .conflict, code: Self.keyReusedCode,
                    message: "this Idempotency-Key was used with a different request")
            }
            let status = try row.decode("status", as: Int.self)
            if status == 0, try row.decode("expired", as: Bool.self) {
                // An abandoned claim: the one retry that moves it forward does the work.
                claimed = try database.withConnection { connection in
                    try connection.execute(
                        """
                        UPDATE idempotency_keys SET created_at = now(), claim_token = \(claim.token)
                        WHERE scope = \(scope) AND key = \(key) AND request_hash = \(requestHash) AND status = 0
                          AND created_at < now() - make_interval(secs => \(expiry))
                        """) == 1
                }
                // Matching no row, the claim changed since it was read: the late holder stored its
                // answer (or released it) or another retry took it over. The row as it is now says which.
                if !claimed, rereads < Self.maximumRereads {
                    return try run(call, rereads: rereads + 1, work)
                }
            }
            if !claimed {
                guard status != 0 else { throw IdempotencyClaim.takenOver() }
                return call.replayed(
                    StoredAnswer(
                        status: status,
                        headers: StoredAnswer.headers(flattened: try row.decode("response_headers", as: [String].self)),
                        body: try row.decode("response_body", as: [UInt8].self)))
            }
        }
        do {
            let answer = try work(claim)
            guard !claim.isRecorded else { return answer }
            let kept = call.stored(answer)
            try database.withConnection { connection in
                if kept.status >= 500 {
                    _ = try connection.execute(claim.releasing())
                } else {
                    _ = try connection.execute(claim.recording(kept))
                }
            }
            return answer
        } catch {
            if let kept = call.refused(error) {
                // A refusal is an answer too: store it so a retry gets the same answer.
                if !claim.isRecorded {
                    try? database.withConnection { _ = try $0.execute(claim.recording(kept)) }
                }
                throw error
            }
            // Only a bare claim goes: an answer the work committed (its acknowledgement lost with
            // the connection) must stay for the retry.
            try? database.withConnection { connection in
                _ = try connection.execute(claim.releasing())
            }
            throw error
        }
    }
}

/// A claimed `Idempotency-Key` as the work sees it: the statement that stores the answer, to run
/// in the work's own transaction, so that the answer commits exactly when the work does.
///
/// A claim is held by its token: once a retry took an expired claim over (a new token), the
/// first holder's statements match no row, and ``holding()`` tells its transaction to give up.
package final class IdempotencyClaim: Sendable {
    package let scope: String
    package let key: String
    /// This holder's token (`idempotency_keys.claim_token`).
    package let token: UUID
    // Guarded by Mutex: set by the work's thread, read by the same request's thread afterwards.
    private let recorded = Mutex(false)

    package init(scope: String, key: String, token: UUID) {
        self.scope = scope
        self.key = key
        self.token = token
    }

    /// The statement storing `answer` as this key's answer, if this holder still holds it.
    package func recording(_ answer: StoredAnswer) -> PostgresQuery {
        """
        UPDATE idempotency_keys SET status = \(answer.status), response_headers = \(answer.flattenedHeaders),
                                    response_body = \(answer.body)
        WHERE scope = \(scope) AND key = \(key) AND status = 0 AND claim_token = \(token)
        """
    }

    /// A row when this holder still holds the claim, locked to the end of the caller's
    /// transaction so no retry can take it over before the answer commits with the work.
    package func holding() -> PostgresQuery {
        """
        SELECT 1 AS held FROM idempotency_keys
        WHERE scope = \(scope) AND key = \(key) AND status = 0 AND claim_token = \(token) FOR UPDATE
        """
    }

    /// Removes the claim when it is still this holder's and has no answer.
    package func releasing() -> PostgresQuery {
        "DELETE FROM idempotency_keys WHERE scope = \(scope) AND key = \(key) AND status = 0 AND claim_token = \(token)"
    }

    /// 409 for a key whose claim another request holds, and the refusal of work whose claim a
    /// retry took over (the first holder was slower than the claim's expiry): nothing was done,
    /// and the retry's answer is the one that counts.
    package static func takenOver(file: String = #fileID, line: Int = #line) -> Refusal {
        Refusal(
            .conflict, code: IdempotencyStore.keyReusedCode,
            message: "a request with this Idempotency-Key is still being processed", file: file, line: line)
    }

    /// Tells the store that the work's committed transaction stored the answer.
    package func markRecorded() { recorded.withLock { $0 = true } }

    /// Whether the answer is already stored.
    package var isRecorded: Bool { recorded.withLock { $0 } }
}
