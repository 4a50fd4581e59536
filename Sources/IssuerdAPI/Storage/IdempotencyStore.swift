import Foundation
import IssuerdCrypto
import IssuerdHTTP
import IssuerdPostgres

extension HTTPError.Code {
    /// The same `Idempotency-Key` was used with another body, or is still being processed.
    static let idempotencyKeyReused: Self = "idempotency_key_reused"
}

/// `Idempotency-Key` (api.md): the same key and body return the stored response; the same key
/// with another body is 409.
///
/// The key is claimed (a row with status 0) before the work runs, so a concurrent retry gets
/// 409 instead of running the work twice; the response replaces the claim afterwards, and a
/// failure removes the claim so the caller can retry. Responses of 5xx are not stored: a
/// retry after an outage should do the work.
struct IdempotencyStore: Sendable {
    static let headerName = "Idempotency-Key"
    let database: PostgresPool

    /// Runs `work` at most once per `(scope, key)`; without the header it simply runs `work`.
    ///
    /// - Parameters:
    ///   - scope: The caller and operation, e.g. `app:<customer>:provision:<card>`, so keys of
    ///     different callers never collide.
    func run(_ request: HTTPRequest, scope: String, _ work: () throws -> HTTPResponse) throws -> HTTPResponse {
        guard let key = request.headers[Self.headerName] else { return try work() }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw APIErrors.invalidRequest("Idempotency-Key must be 1 to 255 visible ASCII characters")
        }
        let requestHash = SHA256.hash(Array(request.method.rawValue.utf8) + [0] + Array(request.path.utf8) + [0] + request.body)
        let claimed = try database.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO idempotency_keys (scope, key, request_hash, status)
                VALUES (\(scope), \(key), \(requestHash), 0) ON CONFLICT DO NOTHING
                """) == 1
        }
        if !claimed {
            let row = try database.withConnection { connection in
                try connection.query(
                    "SELECT request_hash, status, response_body FROM idempotency_keys WHERE scope = \(scope) AND key = \(key)"
                ).first
            }
            guard let row else { return try run(request, scope: scope, work) }  // the claim was just released; try again
            guard try row.decode("request_hash", as: [UInt8].self) == requestHash else {
                throw HTTPError(status: 409, code: .idempotencyKeyReused, message: "this Idempotency-Key was used with a different request")
            }
            let status = try row.decode("status", as: Int.self)
            guard status != 0 else {
                throw HTTPError(status: 409, code: .idempotencyKeyReused, message: "a request with this Idempotency-Key is still being processed")
            }
            var response = HTTPResponse(status: status, body: try row.decode("response_body", as: [UInt8].self))
            response.headers.set("Content-Type", HTTPResponse.jsonContentType)
            response.headers.set("Idempotent-Replayed", "true")
            return response
        }
        do {
            let response = try work()
            try database.withConnection { connection in
                if response.status >= 500 {
                    _ = try connection.execute("DELETE FROM idempotency_keys WHERE scope = \(scope) AND key = \(key)")
                } else {
                    _ = try connection.execute(
                        """
                        UPDATE idempotency_keys SET status = \(response.status), response_body = \(response.body)
                        WHERE scope = \(scope) AND key = \(key)
                        """)
                }
            }
            return response
        } catch let error as HTTPError where error.status < 500 {
            // A refusal is a response too: store it so a retry gets the same answer.
            let response = error.response(requestId: request.requestId)
            try? database.withConnection { connection in
                _ = try connection.execute(
                    """
                    UPDATE idempotency_keys SET status = \(response.status), response_body = \(response.body)
                    WHERE scope = \(scope) AND key = \(key)
                    """)
            }
            throw error
        } catch {
            try? database.withConnection { connection in
                _ = try connection.execute("DELETE FROM idempotency_keys WHERE scope = \(scope) AND key = \(key)")
            }
            throw error
        }
    }
}
