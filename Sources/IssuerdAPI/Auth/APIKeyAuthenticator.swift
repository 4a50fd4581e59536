import Foundation
import IssuerdAuth
import IssuerdConsole
import IssuerdCrypto
import IssuerdHTTP
import IssuerdPostgres

/// API keys on requests: the bearer key (``APIKeyCredential``, IssuerdAuth) or a console session
/// read from the request, looked up in `api_keys`, and refused with 401 or 403.
struct APIKeyAuthenticator: Sendable {
    let database: PostgresPool
    /// The console's sessions, accepted instead of a bearer key where a route allows them.
    var sessions: ConsoleSessions?

    /// The principal of a request's bearer key if its role is one of `roles`.
    ///
    /// - Parameters:
    ///   - consoleSession: Whether the analyst console's session cookie may stand in for the key
    ///     (read-only analyst routes and backtests); a state-changing request then also needs
    ///     the session's CSRF token. A bearer key, when sent, is always what counts.
    /// - Throws: 401 for a missing, unknown or revoked key (or session); 403 for a key of
    ///   another role or a missing CSRF token.
    func authenticate(
        _ request: HTTPRequest, roles: Set<APIKeyRole>, consoleSession: Bool = false
    ) throws -> APIKeyPrincipal {
        if consoleSession, let sessions, !request.headers.contains("Authorization"),
            request.cookie(sessions.cookieName(for: request)) != nil
        {
            let principal = try sessions.authenticate(request).principal
            guard roles.contains(principal.role) else { throw refusedRole(principal, request: request) }
            return principal
        }
        guard let credential = request.bearerCredential, let principal = try principal(key: credential) else {
            request.logger.notice("API key refused")
            throw HTTPError.unauthenticated()
        }
        guard roles.contains(principal.role) else { throw refusedRole(principal, request: request) }
        return principal
    }

    /// What can be checked before the body is read, without the database: a bearer credential in
    /// an API key's form, or a console session cookie. Throws the 401 of ``authenticate(_:roles:consoleSession:)``.
    func admit(_ request: HTTPRequest) throws {
        if let credential = request.bearerCredential, APIKeyCredential.hasKeyForm(credential) { return }
        if let sessions, request.cookie(sessions.cookieName(for: request)) != nil { return }
        throw HTTPError.unauthenticated()
    }

    /// The 403 for a key whose role the route does not allow, logged with the key's id and role.
    private func refusedRole(_ principal: APIKeyPrincipal, request: HTTPRequest) -> HTTPError {
        request.logger.notice(
            "API key refused",
            ["reason": "role", "keyId": .string(principal.keyID), "role": .string(principal.role.rawValue)])
        return HTTPError.forbidden()
    }

    /// The principal of an unrevoked key, or nil (the key is never logged).
    func principal(key credential: String) throws -> APIKeyPrincipal? {
        guard APIKeyCredential.hasKeyForm(credential) else { return nil }
        let digest = APIKeyCredential.digest(credential)
        let row = try database.withConnection { connection in
            try connection.query(
                "SELECT key_id, name, role FROM api_keys WHERE key_hash = \(digest) AND revoked_at IS NULL"
            ).first
        }
        guard let row, let role = APIKeyRole(rawValue: try row.decode("role", as: String.self)) else { return nil }
        return APIKeyPrincipal(keyID: try row.decode("key_id"), name: try row.decode("name"), role: role)
    }

    /// Creates a key and returns it in clear (the only time it exists in clear).
    static func create(
        role: APIKeyRole, name: String, connection: PostgresConnection
    ) throws -> (keyID: String, key: String) {
        let (keyID, key) = try APIKeyCredential.generate()
        let digest = APIKeyCredential.digest(key)
        try connection.execute(
            "INSERT INTO api_keys (key_id, name, role, key_hash) VALUES (\(keyID), \(name), \(role.rawValue), \(digest))"
        )
        return (keyID, key)
    }
}
