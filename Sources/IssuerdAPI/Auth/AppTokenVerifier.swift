import Foundation
import IssuerdCrypto
import IssuerdHTTP
import IssuerdService

/// Verifies the issuer app's bearer JWT and yields the customer id in `sub`.
///
/// The accepted algorithms are fixed by configuration (HS256 with `ISSUERD_APP_JWT_SECRET`,
/// ES256 with `ISSUERD_APP_JWT_PUBLIC_KEY`), never chosen by the token: a token's `alg` only
/// selects among the configured ones, which rules out `none` and HS/ES key confusion
/// (RFC 8725 section 2.1). `exp` is required.
struct AppTokenVerifier: Sendable {
    private let hmacKey: SymmetricKey?
    private let publicKey: P256.Signing.PublicKey?
    /// Tolerated clock difference between the token issuer and issuerd.
    static let leeway: TimeInterval = 30

    init(_ setting: AppJWTSetting) throws {
        hmacKey = try setting.hmacSecret.map { try SymmetricKey(bytes: Array($0.unsafeValue.utf8)) }
        do {
            publicKey = try setting.publicKeyPEM.map { try P256.Signing.PublicKey(pemRepresentation: $0) }
        } catch {
            throw ConfigurationError(key: "ISSUERD_APP_JWT_PUBLIC_KEY", problem: "must be a P-256 public key in PEM")
        }
    }

    /// The customer id of a request's valid token.
    ///
    /// - Throws: 401 ``HTTPError`` for a missing, malformed, forged, expired or not-yet-valid token.
    func customerID(for request: HTTPRequest, now: Date) throws -> String {
        guard let credential = request.bearerCredential, let token = JWT(compact: credential) else {
            throw HTTPError.unauthenticated()
        }
        guard verifySignature(token) else {
            request.logger.notice("app token refused", ["reason": "signature"])
            throw HTTPError.unauthenticated()
        }
        let time = now.timeIntervalSince1970
        guard let expiry = token.expiresAt, time < expiry + Self.leeway else {
            request.logger.notice("app token refused", ["reason": "expired"])
            throw HTTPError.unauthenticated()
        }
        if let notBefore = token.notBefore, time + Self.leeway < notBefore {
            throw HTTPError.unauthenticated()
        }
        guard let subject = token.subject, (1...64).contains(subject.utf8.count) else {
            throw HTTPError.unauthenticated()
        }
        return subject
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

    /// Mints an HS256 token (development and tests: `issuerd dev token`).
    static func mintHS256(secret: String, customerID: String, lifetime: TimeInterval, now: Date) throws -> String {
        let header = BinaryEncoding.base64URLString(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let claims: [String: Any] = [
            "sub": customerID, "iat": Int(now.timeIntervalSince1970), "exp": Int(now.timeIntervalSince1970 + lifetime),
        ]
        let payload = BinaryEncoding.base64URLString(
            Array(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])))
        let signingInput = Array((header + "." + payload).utf8)
        let mac = HMACSHA256.authenticationCode(for: signingInput, using: try SymmetricKey(bytes: Array(secret.utf8)))
        return header + "." + payload + "." + BinaryEncoding.base64URLString(mac)
    }
}
