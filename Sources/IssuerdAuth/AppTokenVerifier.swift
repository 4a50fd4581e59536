import Foundation
import IssuerdCrypto
import IssuerdHTTP
import IssuerdService

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
        maxLifetime = Self.seconds(setting.maxLifetime)
        issuer = setting.issuer
        audience = setting.audience
    }

    /// The customer id of a request's valid token.
    ///
    /// - Throws: 401 ``HTTPError`` for a missing, malformed or forged token, one expired or not
    ///   yet valid, one without `iat` or issued in the future, one valid for longer than the
    ///   maximum lifetime, or one from another issuer or for another audience.
    package func customerID(for request: HTTPRequest, now: Date) throws -> String {
        // The head's admission verified this request's token already (HeadAdmission).
        if let principal = request.admitted as? AppTokenPrincipal { return principal.customerID }
        return try principal(for: request, now: now).customerID
    }

    /// The verified principal of a request's token, for the route's admission on the head
    /// (``customerID(for:now:)`` then takes it from ``HTTPRequest/admitted``).
    ///
    /// - Throws: 401 ``HTTPError`` as ``customerID(for:now:)``.
    package func principal(for request: HTTPRequest, now: Date) throws -> AppTokenPrincipal {
        guard let credential = request.bearerCredential, let token = JWT(compact: credential) else {
            throw HTTPError.unauthenticated()
        }
        guard verifySignature(token) else { throw Self.refused("signature", request) }
        let time = now.timeIntervalSince1970
        guard let expiry = token.expiresAt, time < expiry + Self.leeway else { throw Self.refused("expired", request) }
        if let notBefore = token.notBefore, time + Self.leeway < notBefore {
            throw Self.refused("not yet valid", request)
        }
        guard let issuedAt = token.issuedAt, issuedAt <= time + Self.leeway else {
            throw Self.refused("issued at", request)
        }
        guard expiry - issuedAt <= maxLifetime else { throw Self.refused("lifetime", request) }
        if let issuer, token.issuer != issuer { throw Self.refused("issuer", request) }
        if let audience, token.audience?.contains(audience) != true { throw Self.refused("audience", request) }
        guard let subject = token.subject, (1...64).contains(subject.utf8.count) else {
            throw HTTPError.unauthenticated()
        }
        return AppTokenPrincipal(customerID: subject)
    }

    /// The 401 for a token that parsed, logged with the check it failed (never the token).
    private static func refused(_ reason: String, _ request: HTTPRequest) -> HTTPError {
        request.logger.notice("app token refused", ["reason": .string(reason)])
        return HTTPError.unauthenticated()
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

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// A customer whose app token ``AppTokenVerifier`` verified; only the verifier makes one, so a
/// handler that finds one in ``HTTPRequest/admitted`` need not verify the token again.
package struct AppTokenPrincipal: Sendable {
    /// The token's subject.
    package let customerID: String

    fileprivate init(customerID: String) { self.customerID = customerID }
}
