import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdPostgres
import IssuerdStorage

/// An API key just created: shown once, stored only hashed.
public struct IssuedAPIKey: Sendable, CustomStringConvertible {
    /// The public id, also the audit actor suffix (`apikey:<id>`).
    public let keyID: String
    /// `admin`, `analyst` or `ivr`.
    public let role: String
    /// The key in clear: print it once, never log it.
    public let key: String

    /// Never the key.
    public var description: String { "IssuedAPIKey(\(keyID), \(role))" }
}

/// What an operator does to credentials: API keys for analysts and operators, development app
/// tokens for the issuer app.
public enum OperatorCredentials {
    /// The roles `issuerd apikey create --role` accepts.
    public static var roles: [String] { APIKeyRole.allCases.map(\.rawValue) }

    /// Creates an API key and its audit entry in one transaction.
    ///
    /// - Parameters:
    ///   - role: `admin`, `analyst` or `ivr`.
    ///   - name: Who or what holds the key, 1–64 printable characters.
    ///   - actor: The audit actor, e.g. `cli:alice`.
    /// - Throws: ``CommandInputError`` for a bad role or name; ``PostgresError``.
    public static func createAPIKey(
        role: String, name: String, actor: String, now: Date, database: PostgresPool
    ) throws -> IssuedAPIKey {
        guard let parsed = APIKeyRole(rawValue: role) else {
            throw CommandInputError("--role must be one of \(roles.joined(separator: ", "))")
        }
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard (1...64).contains(trimmed.count),
            !trimmed.containsControlCharacter
        else {
            throw CommandInputError("--name must be 1 to 64 printable characters")
        }
        return try database.transaction { connection in
            let (keyID, key) = try APIKeyAuthenticator.create(role: parsed, name: trimmed, connection: connection)
            try AuditLog.append(
                actor: actor, action: "apikey.created", subject: "apikey:\(keyID)",
                details: ["role": role, "name": trimmed], at: now,
                connection: connection)
            return IssuedAPIKey(keyID: keyID, role: role, key: key)
        }
    }

    /// A development HS256 app token for `customerID` (`issuerd dev token`), signed with
    /// `ISSUERD_APP_JWT_SECRET` and carrying what the server requires: `iat`, a lifetime within
    /// `ISSUERD_APP_JWT_MAX_LIFETIME`, and `ISSUERD_APP_JWT_ISSUER`/`_AUDIENCE` when set.
    ///
    /// - Parameter lifetime: Seconds from 30 to the maximum lifetime; that maximum when nil.
    /// - Throws: ``ConfigurationError`` for a missing or bad setting; ``CommandInputError`` for a
    ///   customer id outside 1–64 characters of `[A-Za-z0-9._:-]` or a lifetime out of range.
    public static func developmentAppToken(
        _ reader: ConfigurationReader, customerID: String, lifetime: TimeInterval?, now: Date
    ) throws -> String {
        guard (try? AdminValidation.identifier(customerID, field: "customerId")) != nil else {
            throw CommandInputError("--customer must be 1 to 64 characters of A-Z a-z 0-9 . _ : -")
        }
        let secret = try OperatorSettings.appJWTSecret(reader)
        let setting = try AppJWTSetting(reader, requireKey: false)
        let longest = TimeInterval(setting.maxLifetime.components.seconds)
        guard (30...longest).contains(lifetime ?? longest) else {
            throw CommandInputError(
                "--ttl must be from 30s to ISSUERD_APP_JWT_MAX_LIFETIME (\(Int(longest))s): the server refuses longer tokens"
            )
        }
        return try AppTokenVerifier.mintHS256(
            secret: secret.unsafeValue, customerID: customerID, lifetime: lifetime ?? longest, now: now,
            issuer: setting.issuer, audience: setting.audience)
    }
}
