import Foundation
import IssuerdAuth
import IssuerdCrypto
import IssuerdHTTP
import IssuerdPostgres

/// Authenticates token service provider calls by `X-Issuerd-Signature` (docs/openapi.yaml, `tspSignature`).
///
/// Three checks, in order: the HMAC over `"<t>.<raw body>"` (constant-time), the timestamp
/// within 300 s of now (both ``TSPSignature``'s, in IssuerdAuth), and the signature never seen
/// before. Seen signatures are kept in
/// PostgreSQL, not in memory, so a replay to another instance behind the load balancer is
/// refused too. ``verify(_:now:)`` makes the first two; the third is the signature's record
/// (``VerifiedTSPSignature``), which the tokenization authorization writes in its own
/// transaction and ``authenticate(_:database:now:)`` on its own.
struct TSPAuthenticator: Sendable {
    static let headerName = TSPSignature.headerName
    /// A timestamp more than 300 s off is refused.
    static let window: TimeInterval = 300

    private let key: SymmetricKey

    init(secret: String) throws {
        key = try SymmetricKey(bytes: Array(secret.utf8))
    }

    /// Verifies the request's HMAC and timestamp, or throws 401; the replay check is left to the
    /// returned signature's record.
    func verify(_ request: HTTPRequest, now: Date) throws -> VerifiedTSPSignature {
        guard let header = request.headers[Self.headerName], let signature = TSPSignature(header: header) else {
            throw HTTPError.unauthenticated(scheme: "IssuerdSignature")
        }
        guard let matched = signature.matching(body: request.body, key: key) else {
            request.logger.notice("TSP signature refused", ["reason": "mismatch"])
            throw HTTPError.unauthenticated(scheme: "IssuerdSignature")
        }
        guard signature.isWithin(Self.window, of: now) else {
            request.logger.notice("TSP signature refused", ["reason": "timestamp outside window"])
            throw HTTPError.unauthenticated(scheme: "IssuerdSignature")
        }
        return VerifiedTSPSignature(fingerprint: BinaryEncoding.hexString(matched))
    }

    /// What can be checked before the body is read: the header well formed, its time within the
    /// window. Throws the same 401 as ``verify(_:now:)``.
    func admit(_ request: HTTPRequest, now: Date) throws {
        guard let header = request.headers[Self.headerName], let signature = TSPSignature(header: header),
            signature.isWithin(Self.window, of: now)
        else { throw HTTPError.unauthenticated(scheme: "IssuerdSignature") }
    }

    /// Verifies the request and records its signature before the work, or throws 401.
    func authenticate(_ request: HTTPRequest, database: PostgresPool, now: Date) throws {
        let signature = try verify(request, now: now)
        guard try signature.recordAlone(database: database) else {
            throw VerifiedTSPSignature.replayed(logger: request.logger)
        }
    }

    /// The header value for `body` at `timestamp` (outbound webhooks and tests sign with it).
    static func sign(body: [UInt8], secret: String, timestamp: Int64) throws -> String {
        try TSPSignature.header(body: body, secret: secret, timestamp: timestamp)
    }
}
