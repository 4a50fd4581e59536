import IssuerdCore

/// How issuer-app bearer tokens are verified: HS256 with a shared secret, ES256 with a public
/// key, or both; and what their claims must say besides the customer.
public struct AppJWTSetting: Sendable {
    /// `ISSUERD_APP_JWT_SECRET` (HS256), at least 32 bytes.
    public var hmacSecret: Redacted<String>?
    /// `ISSUERD_APP_JWT_PUBLIC_KEY` (ES256), PEM text or a path to it.
    public var publicKeyPEM: String?
    /// The longest a token may be valid, `exp` − `iat` (`ISSUERD_APP_JWT_MAX_LIFETIME`, default 1h).
    public var maxLifetime: Duration
    /// The `iss` every token must carry (`ISSUERD_APP_JWT_ISSUER`); none checked when nil.
    public var issuer: String?
    /// A value every token's `aud` must hold (`ISSUERD_APP_JWT_AUDIENCE`); none checked when nil.
    public var audience: String?

    /// The range of `ISSUERD_APP_JWT_MAX_LIFETIME`.
    package static let maxLifetimeRange = Duration.seconds(60)...Duration.seconds(86_400)

    /// Reads the `ISSUERD_APP_JWT_*` settings.
    ///
    /// - Parameter requireKey: False for a command that needs only the claims' settings (it reads
    ///   the secret itself); `serve` needs a secret or a public key to verify with.
    /// - Throws: ``ConfigurationError`` for the first missing or malformed setting.
    package init(_ reader: ConfigurationReader, requireKey: Bool = true) throws {
        hmacSecret = reader.string("ISSUERD_APP_JWT_SECRET").map(Redacted.init)
        publicKeyPEM = try reader.pem("ISSUERD_APP_JWT_PUBLIC_KEY")
        if let secret = hmacSecret, secret.unsafeValue.utf8.count < 32 {
            throw ConfigurationError(key: "ISSUERD_APP_JWT_SECRET", problem: "must be at least 32 bytes for HS256")
        }
        guard hmacSecret != nil || publicKeyPEM != nil || !requireKey else {
            throw ConfigurationError(
                key: "ISSUERD_APP_JWT_SECRET",
                problem: "is required unless ISSUERD_APP_JWT_PUBLIC_KEY is set (issuer-app tokens must be verifiable)")
        }
        maxLifetime = try reader.duration(
            "ISSUERD_APP_JWT_MAX_LIFETIME", default: .seconds(3600), in: Self.maxLifetimeRange)
        issuer = try Self.claim(reader, "ISSUERD_APP_JWT_ISSUER")
        audience = try Self.claim(reader, "ISSUERD_APP_JWT_AUDIENCE")
    }

    private static func claim(_ reader: ConfigurationReader, _ key: String) throws -> String? {
        guard let value = reader.string(key) else { return nil }
        guard value.utf8.count <= 256, !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else { throw ConfigurationError(key: key, problem: "must be at most 256 characters, none a control character") }
        return value
    }
}
