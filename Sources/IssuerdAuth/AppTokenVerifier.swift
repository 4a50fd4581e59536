import Foundation
import IssuerdCore
import IssuerdCrypto

/// Verifies the issuer app's bearer JWT and yields the customer id in `sub`.
///
/// The accepted algorithms are fixed by configuration (HS256 with `ISSUERD_APP_JWT_SECRET`,
/// ES256 with `ISSUERD_APP_JWT_PUBLIC_KEY`), never chosen by the token: a token's `alg` only
/// selects among the configured ones, which rules out `none` and HS/ES key confusion
/// (RFC 8725 section 2.1). `exp` and `iat` are required, and a token may be valid for at most
/// `ISSUERD_APP_JWT_MAX_LIFETIME` (`exp` − `iat`), so a leaked or mis-minted token cannot be
/// good for years; `iss` and `aud` are checked when configured (RFC 8725 sections 3.8 and 3.9).
package struct AppTokenVerifier: Sendable {
    private let hmacKey: SymmetricKey?
    private let publicKey: P256.Signing.PublicKey?
    private let maxLifetime: TimeInterval
    private let issuer: String?
    private let audience: String?
    /// Tolerated clock difference between the token issuer and issuerd.
    package static let leeway: TimeInterval = 30

    package init(_ setting: AppJWTSetting) throws {
        hmacKey = try setting.hmacSecret.map { try SymmetricKey(bytes: Array($0.unsafeValue.utf8)) }
        do {
            publicKey = try setting.publicKeyPEM.map { try P256.Signing.PublicKey(pemRepresentation: $0) }
        } catch {
            throw ConfigurationError(key: "ISSUERD_APP_JWT_PUBLIC_KEY", problem: "must be a P-256 public key in PEM")
        }
        maxLifetime = setting.maxLifetime.timeInterval
        issuer = setting.issuer
        audience = setting.audience
    }

    /// The customer id of a valid token (a request's bearer credential).
    ///
    /// - Parameter logger: The request's, to log which check a token that parsed failed.
    /// - Throws: ``Refusal`` `unauthenticated` for a missing, malformed or forged token, one
    ///   expired or not yet valid, one without `iat` or issued in the future, one valid for longer
    ///   than the maximum lifetime, or one from another issuer or for another audience: the same
    ///   answer whatever failed.
    package func customerID(bearer credential: String?, now: Date, logger: Logger) throws -> String {
        guard let credential, let token = JWT(compact: credential) else { throw Self.unauthenticated() }
        guard verifySignature(token) else { throw Self.refused("signature", logger) }
        let time = now.timeIntervalSince1970
        guard let expiry = token.expiresAt, time < expiry + Self.leeway else { throw Self.refused("expired", logger) }
        if let notBefore = token.notBefore, time + Self.leeway < notBefore {
            throw Self.refused("not yet valid", logger)
        }
        guard let issuedAt = token.issuedAt, issuedAt <= time + Self.leeway else {
            throw Self.refused("issued at", logger)
        }
        guard expiry - issuedAt <= maxLifetime else { throw Self.refused("lifetime", logger) }
        if let issuer, token.issuer != issuer { throw Self.refused("issuer", logger) }
        if let audience, token.audience?.contains(audience) != true { throw Self.refused("audience", logger) }
        guard let subject = token.subject, (1...64).contains(subject.utf8.count) else {
            throw Self.unauthenticated()
        }
        return subject
    }

    /// The refusal of a token that parsed, logged with the check it failed (never the token).
    private static func refused(_ reason: String, _ logger: Logger) -> Refusal {
        logger.notice("app token refused", ["reason": .string(reason)])
        return unauthenticated()
    }

    private static func unauthenticated(file: String = #fileID, line: Int = #line) -> Refusal {
        Refusal(
            .unauthenticated, code: "unauthenticated", message: "missing or invalid credentials", file: file, line: line
        )
    }

    private func verifySignature(_ token: JWT) -> Bool {
        switch token.algorithm {
        case "HS256":
            guard let hmacKey else { return false }
            return HMACSHA256.isValidAuthenticationCode(
                token.signature, authenticating: token.signingInput, using: hmacKey)
        case "ES256":
            guard let publicKey, let signature = try? P256.Signing.ECDSASignature(rawRepresentation: token.signature)
            else { return false }
            return publicKey.isValidSignature(signature, for: token.signingInput)
        default:
            return false
        }
    }

    /// Mints an HS256 token (development and tests: `issuerd dev token`), with `iat` now and
    /// `iss` and `aud` when given.
    package static func mintHS256(
        secret: String, customerID: String, lifetime: TimeInterval, now: Date, issuer: String? = nil,
        audience: String? = nil
    ) throws -> String {
        let header = BinaryEncoding.base64URLString(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        var claims: [String: Any] = [
            "sub": customerID, "iat": Int(now.timeIntervalSince1970), "exp": Int(now.timeIntervalSince1970 + lifetime),
        ]
        claims["iss"] = issuer
        claims["aud"] = audience
        let payload = BinaryEncoding.base64URLString(
            Array(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])))
        let signingInput = Array((header + "." + payload).utf8)
        let mac = HMACSHA256.authenticationCode(for: signingInput, using: try SymmetricKey(bytes: Array(secret.utf8)))
        return header + "." + payload + "." + BinaryEncoding.base64URLString(mac)
    }

}
