import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres

/// A TSP signature whose HMAC and timestamp verified, not yet known to be fresh: recording it in
/// `tsp_signatures_seen` decides, once, whether the request is a replay.
///
/// Work that changes something records the signature in its own transaction (``insertion()``
/// in its first round trip), so the signature commits exactly when the work does: a replay,
/// even one racing the original, waits for the original's transaction and then finds the
/// signature. Everything else (a bad body, an idempotent replay, a refusal that rolled back)
/// records it on its own afterwards (``guarding(database:logger:_:)``), so a replayed signature
/// is refused once any request carrying it committed or was answered below 500. A request that
/// failed with a server error and could not record it (the database away) leaves it unrecorded:
/// a copy within the window is then decided once, as a first request.
final class VerifiedTSPSignature: Sendable {
    /// The matched signature in hex (`tsp_signatures_seen.signature`).
    let fingerprint: String
    // Guarded by Lock: set by the work on the request's thread, read there afterwards.
    private let decided = Lock(false)

    init(fingerprint: String) {
        self.fingerprint = fingerprint
    }

    /// The statement recording the signature: one row (`fresh`) when it was not seen before.
    ///
    /// A concurrent transaction that inserted the same signature makes this wait for it: one
    /// that commits makes this one a replay, one that rolls back leaves the signature to this one.
    func insertion() -> PostgresQuery {
        "INSERT INTO tsp_signatures_seen (signature) VALUES (\(fingerprint)) ON CONFLICT DO NOTHING RETURNING true AS fresh"
    }

    /// Now and then, the statement removing entries that can never be replayed (outside the
    /// 300 s window), for the caller to send with its other statements; nil most of the time.
    static func pruningNowAndThen() -> PostgresQuery? {
        // Old entries are pruned here, occasionally, rather than by a separate job.
        guard Int.random(in: 0..<100) == 0 else { return nil }
        return "DELETE FROM tsp_signatures_seen WHERE seen_at < now() - interval '15 minutes'"
    }

    /// Tells the guard that a committed transaction settled the signature (recorded it, or found
    /// it recorded and refused the request), so it is not recorded again on its own.
    func markDecided() { decided.withLock { $0 = true } }

    /// Whether a committed transaction settled the signature.
    var isDecided: Bool { decided.withLock { $0 } }

    /// Records the signature in a statement of its own.
    ///
    /// - Returns: False when it was recorded before: the request is a replay.
    func recordAlone(database: PostgresPool) throws -> Bool {
        let inserted = try database.withConnection { connection in
            if let pruning = Self.pruningNowAndThen() { _ = try connection.execute(pruning) }
            return try connection.query(insertion()).count
        }
        markDecided()
        return inserted == 1
    }

    /// Runs `work` (which may record the signature in its own transaction) and records the
    /// signature afterwards when it did not; a replay is 401 whatever `work` answered or threw.
    func guarding(database: PostgresPool, logger: Logger, _ work: () throws -> HTTPResponse) throws -> HTTPResponse {
        let response: HTTPResponse
        do {
            response = try work()
        } catch {
            guard !isDecided else { throw error }
            // A client's mistake (4xx) is answered 401 when the signature turns out to be a
            // replay. Any other failure (the database away, a COMMIT whose acknowledgement was
            // lost) keeps its own answer: the signature found may be this request's own commit,
            // and a 401 would tell the TSP that an authorization which did commit was refused.
            // The signature is still recorded when it can be, so a copy of these bytes is 401.
            let recorded = try? recordAlone(database: database)
            if recorded == false, let refusal = HTTPError.answer(for: error), refusal.status < 500 {
                throw Self.replayed(logger: logger)
            }
            throw error
        }
        if !isDecided, try !recordAlone(database: database) { throw Self.replayed(logger: logger) }
        return response
    }

    /// The refusal of a replayed signature.
    static func replayed(logger: Logger) -> HTTPError {
        logger.warning("TSP signature refused", ["reason": "replayed"])
        return HTTPError.unauthenticated(scheme: "IssuerdSignature")
    }
}
