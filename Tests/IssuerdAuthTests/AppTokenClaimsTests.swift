import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdCrypto
import IssuerdTestSupport
import Testing

/// What an app token must claim besides its signature: `iat`, a lifetime within
/// `ISSUERD_APP_JWT_MAX_LIFETIME`, and the configured `iss` and `aud`.
@Suite("App token claims: iat, lifetime, issuer, audience")
struct AppTokenClaimsTests {
    static let secret = String(repeating: "k", count: 40)
    static let now = Date(timeIntervalSince1970: 1_900_000_000)

    /// An HS256 token over exactly these claims.
    static func token(_ claims: [String: Any], secret: String = secret) throws -> String {
        try TestJWT.hs256(claims, secret: secret)
    }

    static func verifier(_ settings: [String: String] = [:]) throws -> AppTokenVerifier {
        try AppTokenVerifier(
            AppJWTSetting(ConfigurationReader(["ISSUERD_APP_JWT_SECRET": secret].merging(settings) { _, new in new })))
    }

    /// The customer id the verifier yields, or nil when it refuses the token as unauthenticated.
    static func accepted(_ claims: [String: Any], by verifier: AppTokenVerifier) throws -> String? {
        do {
            return try verifier.customerID(bearer: try token(claims), now: now, logger: .silent)
        } catch let refusal as Refusal {
            #expect(refusal.kind == .unauthenticated)
            return nil
        }
    }

    static let issued = Int(now.timeIntervalSince1970)

    @Test("A token valid for 100 years is refused; one valid for the maximum lifetime is not")
    func lifetime() throws {
        let verifier = try Self.verifier()
        let century = 100 * 365 * 86_400
        #expect(
            try Self.accepted(["sub": "c1", "iat": Self.issued, "exp": Self.issued + century], by: verifier) == nil)
        // Issued long ago but still unexpired: the lifetime, not the time left, is what counts.
        #expect(
            try Self.accepted(["sub": "c1", "iat": Self.issued - century / 2, "exp": Self.issued + 60], by: verifier)
                == nil)
        #expect(try Self.accepted(["sub": "c1", "iat": Self.issued, "exp": Self.issued + 3600], by: verifier) == "c1")
        #expect(try Self.accepted(["sub": "c1", "iat": Self.issued, "exp": Self.issued + 3601], by: verifier) == nil)
        let daily = try Self.verifier(["ISSUERD_APP_JWT_MAX_LIFETIME": "24h"])
        #expect(try Self.accepted(["sub": "c1", "iat": Self.issued, "exp": Self.issued + 86_400], by: daily) == "c1")
    }

    @Test("A token without iat, or issued in the future beyond the leeway, is refused")
    func issuedAt() throws {
        let verifier = try Self.verifier()
        #expect(try Self.accepted(["sub": "c1", "exp": Self.issued + 600], by: verifier) == nil)
        #expect(try Self.accepted(["sub": "c1", "iat": "now", "exp": Self.issued + 600], by: verifier) == nil)
        #expect(
            try Self.accepted(["sub": "c1", "iat": Self.issued + 120, "exp": Self.issued + 600], by: verifier) == nil)
        // Within the 30 s clock leeway.
        #expect(
            try Self.accepted(["sub": "c1", "iat": Self.issued + 20, "exp": Self.issued + 600], by: verifier) == "c1")
    }

    @Test("With ISSUERD_APP_JWT_ISSUER and _AUDIENCE set, a token of another issuer or audience is refused")
    func issuerAndAudience() throws {
        let verifier = try Self.verifier([
            "ISSUERD_APP_JWT_ISSUER": "https://login.example-bank.com", "ISSUERD_APP_JWT_AUDIENCE": "issuerd",
        ])
        let base: [String: Any] = ["sub": "c1", "iat": Self.issued, "exp": Self.issued + 600]
        func with(_ extra: [String: Any]) -> [String: Any] { base.merging(extra) { _, new in new } }
        let issuer = "https://login.example-bank.com"
        #expect(try Self.accepted(with(["iss": issuer, "aud": "issuerd"]), by: verifier) == "c1")
        #expect(try Self.accepted(with(["iss": issuer, "aud": ["wallet", "issuerd"]]), by: verifier) == "c1")
        #expect(try Self.accepted(with(["aud": "issuerd"]), by: verifier) == nil)
        #expect(try Self.accepted(with(["iss": "https://evil.example", "aud": "issuerd"]), by: verifier) == nil)
        #expect(try Self.accepted(with(["iss": issuer]), by: verifier) == nil)
        #expect(try Self.accepted(with(["iss": issuer, "aud": "wallet"]), by: verifier) == nil)
        #expect(try Self.accepted(with(["iss": issuer, "aud": ["wallet", 7]]), by: verifier) == nil)
        // Not configured: neither claim is looked at.
        #expect(try Self.accepted(with(["iss": "anyone", "aud": 7]), by: try Self.verifier()) == "c1")
    }

    @Test("Minted tokens carry iat, and iss and aud when given, and pass")
    func minted() throws {
        let verifier = try Self.verifier(["ISSUERD_APP_JWT_ISSUER": "login", "ISSUERD_APP_JWT_AUDIENCE": "issuerd"])
        let token = try AppTokenVerifier.mintHS256(
            secret: Self.secret, customerID: "c9", lifetime: 3600, now: Self.now, issuer: "login", audience: "issuerd")
        let parsed = try #require(JWT(compact: token))
        #expect(parsed.issuedAt == Double(Self.issued))
        #expect(parsed.issuer == "login")
        #expect(parsed.audience == ["issuerd"])
        #expect(try verifier.customerID(bearer: token, now: Self.now, logger: .silent) == "c9")
    }
}
