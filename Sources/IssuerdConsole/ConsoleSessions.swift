import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdPostgres
import IssuerdStorage

/// One signed-in analyst: the API key it was opened with, its CSRF token and its end.
package struct ConsoleSession: Sendable {
    package let principal: APIKeyPrincipal
    /// Sent back in `X-CSRF-Token` on every state-changing request.
    package let csrfToken: String
    package let expiresAt: Date
}

/// The console's sessions, kept in PostgreSQL (`console_sessions`) so every instance honours,
/// expires and ends them alike.
///
/// The cookie holds 256 random bits; the table holds only their SHA-256, the key id, a random
/// CSRF token and an absolute expiry. A session ends when it expires, when its analyst signs
/// out, or when its API key is revoked (checked on every request).
package struct ConsoleSessions: Sendable {
    /// The cookie's name over plain HTTP (development on loopback).
    package static let cookieName = "issuerd_console"
    /// The cookie's name when it is `Secure`: the `__Host-` prefix (RFC 6265bis, section 4.1.3.2)
    /// makes browsers accept it only from a secure origin with `Path=/` and no `Domain`, so a
    /// sibling subdomain cannot plant or overwrite it. Only this name is read then.
    package static let secureCookieName = "__Host-issuerd_console"
    /// The header a state-changing request carries its CSRF token in.
    package static let csrfHeader = "X-CSRF-Token"

    package let database: PostgresPool
    package let settings: ConsoleSettings
    package let clock: @Sendable () -> Date

    /// Creates the value from every stored property.
    package init(database: PostgresPool, settings: ConsoleSettings, clock: @escaping @Sendable () -> Date) {
        self.database = database
        self.settings = settings
        self.clock = clock
    }

    /// What a request's cookie leads to.
    package enum Lookup: Sendable {
        case valid(ConsoleSession)
        /// A session that existed and ran out.
        case expired
        /// No cookie, a malformed one, a forged one, a signed-out one, or a revoked key.
        case unknown
    }

    /// How long an expired session's row is kept, so that its cookie is still answered
    /// "expired" (not "invalid") for a while; pruned by the next sign-in after that.
    package static let expiredRetention: TimeInterval = 7 * 86_400

    /// Opens a session for `principal`, ending the one the request's cookie names, if any (a
    /// sign-in replaces the browser's session: a copy of the old cookie must not outlive it);
    /// sessions expired for longer than ``expiredRetention`` are pruned on the way.
    ///
    /// - Returns: The cookie value (the only time it exists in clear) and the session.
    package func open(
        for principal: APIKeyPrincipal, request: HTTPRequest
    ) throws -> (cookie: String, session: ConsoleSession) {
        let secret = BinaryEncoding.base64URLString(try SecureRandom.bytes(count: 32))
        let csrf = BinaryEncoding.base64URLString(try SecureRandom.bytes(count: 32))
        let now = clock()
        let expiresAt = now.addingTimeInterval(settings.sessionLifetime.timeInterval)
        let previous = request.cookie(cookieName(for: request)).flatMap {
            Self.isWellFormed($0) ? SHA256.hash(Array($0.utf8)) : nil
        }
        try database.transaction { connection in
            try connection.execute(
                "DELETE FROM console_sessions WHERE expires_at < \(now.addingTimeInterval(-Self.expiredRetention))")
            if let previous { try connection.execute("DELETE FROM console_sessions WHERE session_hash = \(previous)") }
            try connection.execute(
                """
                INSERT INTO console_sessions (session_hash, key_id, csrf_token, created_at, expires_at)
                VALUES (\(SHA256.hash(Array(secret.utf8))), \(principal.keyID), \(csrf), \(now), \(expiresAt))
                """)
            try AuditLog.append(
                actor: principal.auditActor, action: "console.signed_in", subject: "apikey:\(principal.keyID)",
                details: ["expiresAt": RFC3339.string(expiresAt), "remote": request.remoteAddress ?? "-"], at: now,
                connection: connection)
        }
        return (secret, ConsoleSession(principal: principal, csrfToken: csrf, expiresAt: expiresAt))
    }

    /// The session a request's cookie names, if any.
    package func lookup(_ request: HTTPRequest) throws -> Lookup {
        guard let value = request.cookie(cookieName(for: request)), Self.isWellFormed(value) else { return .unknown }
        let row = try database.withConnection { connection in
            try connection.query(
                """
                SELECT s.key_id, s.csrf_token, s.expires_at, k.name, k.role
                FROM console_sessions s JOIN api_keys k ON k.key_id = s.key_id AND k.revoked_at IS NULL
                WHERE s.session_hash = \(SHA256.hash(Array(value.utf8)))
                """
            ).first
        }
        guard let row, let role = APIKeyRole(rawValue: try row.decode("role", as: String.self)) else { return .unknown }
        let expiresAt: Date = try row.decode("expires_at")
        guard expiresAt > clock() else { return .expired }
        let principal = APIKeyPrincipal(keyID: try row.decode("key_id"), name: try row.decode("name"), role: role)
        return .valid(
            ConsoleSession(principal: principal, csrfToken: try row.decode("csrf_token"), expiresAt: expiresAt))
    }

    /// The request's session, refusing a missing, expired or forged one (401) and, for any
    /// method but GET and HEAD, a missing or wrong CSRF token (403). Every refusal is logged,
    /// never with the cookie or the token.
    package func authenticate(_ request: HTTPRequest) throws -> ConsoleSession {
        switch try lookup(request) {
        case .unknown:
            request.logger.notice("console session refused", ["reason": "unknown"])
            throw HTTPError.unauthenticated(scheme: "Cookie")
        case .expired:
            request.logger.notice("console session refused", ["reason": "expired"])
            throw HTTPError(
                status: 401, code: "session_expired", message: "the console session has expired; sign in again",
                headers: ["WWW-Authenticate": "Cookie realm=\"issuerd\""])
        case .valid(let session):
            try requireCSRFToken(request, of: session)
            return session
        }
    }

    /// For any method but GET and HEAD: refuses (403, logged) a request without `session`'s
    /// CSRF token.
    package func requireCSRFToken(_ request: HTTPRequest, of session: ConsoleSession) throws {
        if request.method != .get && request.method != .head
            && !Self.csrfMatches(request.headers[Self.csrfHeader], session.csrfToken)
        {
            request.logger.notice(
                "console request refused", ["reason": "csrf", "keyId": .string(session.principal.keyID)])
            throw HTTPError(
                status: 403, code: "csrf_token_invalid",
                message: "a state-changing console request must carry the session's X-CSRF-Token header")
        }
    }

    /// Ends the request's session (idempotent).
    package func close(_ request: HTTPRequest) throws {
        guard let value = request.cookie(cookieName(for: request)), Self.isWellFormed(value) else { return }
        try database.withConnection { connection in
            try connection.execute(
                "DELETE FROM console_sessions WHERE session_hash = \(SHA256.hash(Array(value.utf8)))")
        }
    }

    /// The `Set-Cookie` value carrying `value`, or clearing the cookie when nil.
    ///
    /// `HttpOnly` (scripts never see it), `SameSite=Strict` (never sent on a cross-site
    /// request), `Path=/` (the console's scripts call `/v1/admin/…`), `Secure` per
    /// ``ConsoleSettings/secureCookies``. `Max-Age` mirrors the server-side expiry, which is what counts.
    package func setCookie(_ value: String?, request: HTTPRequest) -> String {
        var parts = ["\(cookieName(for: request))=\(value ?? "")", "Path=/", "HttpOnly", "SameSite=Strict"]
        parts.append("Max-Age=\(value == nil ? 0 : Int(settings.sessionLifetime.timeInterval))")
        if isSecure(request) { parts.append("Secure") }
        return parts.joined(separator: "; ")
    }

    /// ``secureCookieName`` when the cookie is `Secure` for this request, else ``cookieName``.
    package func cookieName(for request: HTTPRequest) -> String {
        isSecure(request) ? Self.secureCookieName : Self.cookieName
    }

    /// Whether the request came over TLS, as configured or as the TLS-terminating proxy says.
    package func isSecure(_ request: HTTPRequest) -> Bool {
        switch settings.secureCookies {
        case .always: true
        case .never: false
        case .auto: request.headers["X-Forwarded-Proto"]?.lowercased() == "https"
        }
    }

    /// 43 base64url characters: what ``open(for:request:)`` makes; anything else is not looked up.
    package static func isWellFormed(_ value: String) -> Bool {
        value.utf8.count == 43
            && value.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == 0x2D || byte == 0x5F
            }
    }

    /// Constant-time comparison of the sent token with the session's.
    package static func csrfMatches(_ sent: String?, _ expected: String) -> Bool {
        guard let sent, sent.utf8.count == expected.utf8.count else { return false }
        let lhs = Array(sent.utf8)
        let rhs = Array(expected.utf8)
        return lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in constantTimeEquals(a, b) } }
    }

}
