import Foundation

/// Credentials a developer or a demo needs to call a development instance: an issuer-app token
/// and a TSP signature, made with the same code the server verifies them with.
public enum DevelopmentCredentials {
    /// An HS256 app token for `customerID`, valid for `lifetime` seconds.
    public static func appToken(
        secret: String, customerID: String, lifetime: TimeInterval = 3600, now: Date = Date()
    ) throws -> String {
        try AppTokenVerifier.mintHS256(secret: secret, customerID: customerID, lifetime: lifetime, now: now)
    }

    /// The `X-Issuerd-Signature` value for `body` signed now.
    public static func tspSignature(body: [UInt8], secret: String, now: Date = Date()) throws -> String {
        try TSPAuthenticator.sign(body: body, secret: secret, timestamp: Int64(now.timeIntervalSince1970))
    }
}
