import Foundation
import IssuerdAuth

/// Credentials a developer or a demo needs to call a development instance: an issuer-app token
/// and a TSP signature, made with the same code the server verifies them with.
public enum DevelopmentCredentials {
    /// An HS256 app token for `customerID`, valid for `lifetime` seconds (at most the server's
    /// `ISSUERD_APP_JWT_MAX_LIFETIME`), with the `iss` and `aud` the server requires, if any.
    public static func appToken(
        secret: String, customerID: String, lifetime: TimeInterval = 600, now: Date = Date(), issuer: String? = nil,
        audience: String? = nil
    ) throws -> String {
        try AppTokenVerifier.mintHS256(
            secret: secret, customerID: customerID, lifetime: lifetime, now: now, issuer: issuer, audience: audience)
    }

    /// The `X-Issuerd-Signature` value for `body` signed now.
    public static func tspSignature(body: [UInt8], secret: String, now: Date = Date()) throws -> String {
        try TSPAuthenticator.sign(body: body, secret: secret, timestamp: Int64(now.timeIntervalSince1970))
    }
}
