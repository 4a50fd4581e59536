import Foundation
import IssuerdCrypto
import Testing

@testable import IssuerdMDES

/// The OAuth 1.0a RSA-SHA256 signer's rules (Mastercard's "Using OAuth 1.0a to Access Mastercard
/// APIs"), against the published vectors of Mastercard's signer; MastercardOracleTests checks whole
/// headers against the signer itself.
@Suite struct MastercardOAuth1SignerTests {
    @Test func baseStringOfMastercardsTestVector() throws {
        // Mastercard/oauth1-signer-java OAuthTest: duplicate query names sorted by value, the oauth
        // values inserted raw and encoded once with the rest. That test hands the base URI in
        // already normalized ("https://api.mastercard.com", no path); from a URL, both Mastercard
        // signers make the empty path "/" (Python's `normalize_url`, Java's `getBaseUriString`).
        let base = try MastercardOAuth1Signer.signatureBaseString(
            method: "POST", url: "https://api.mastercard.com?first_param=value&first_param=othervalue&param2=hello",
            oauthParameters: [("oauth_body_hash", "body/hash"), ("oauth_nonce", "randomnonce")])
        #expect(
            base
                == "POST&https%3A%2F%2Fapi.mastercard.com%2F&first_param%3Dothervalue%26first_param%3Dvalue%26oauth_body_hash%3Dbody%2Fhash%26oauth_nonce%3Drandomnonce%26param2%3Dhello"
        )
    }

    @Test func bodyHash() {
        #expect(MastercardOAuth1Signer.bodyHash([]) == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
        // SHA-256("abc"), Base64.
        #expect(MastercardOAuth1Signer.bodyHash(Array("abc".utf8)) == "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=")
    }

    @Test func percentEncoding() {
        #expect(MastercardOAuth1Signer.percentEncode("AZaz09-._~") == "AZaz09-._~")
        #expect(MastercardOAuth1Signer.percentEncode("a b+c/d=e!*'()") == "a%20b%2Bc%2Fd%3De%21%2A%27%28%29")
        #expect(MastercardOAuth1Signer.percentEncode("é€") == "%C3%A9%E2%82%AC")
    }

    @Test func baseURINormalization() throws {
        let cases: [(String, String)] = [
            (
                "HTTPS://API.Mastercard.com:443/mdes/csapi/v2/token/suspend",
                "https://api.mastercard.com/mdes/csapi/v2/token/suspend"
            ),
            ("http://Example.com:80", "http://example.com/"),
            ("https://example.com:8443/A/B%2Fc?x=1#frag", "https://example.com:8443/A/B%2Fc"),
            ("https://example.com:80/", "https://example.com:80/"),
        ]
        for (url, expected) in cases {
            #expect(try BaseURI(url).normalized == expected, "\(url)")
        }
        #expect(try BaseURI("https://h/p?a=1&b&c=x%20y").query.map { "\($0.0)=\($0.1)" } == ["a=1", "b=", "c=x%20y"])
        #expect(throws: MastercardOAuthError.self) { try BaseURI("/relative/path") }
        #expect(throws: MastercardOAuthError.self) { try BaseURI("ftp://example.com/") }
        #expect(throws: MastercardOAuthError.self) { try BaseURI("https://user@example.com/") }
    }

    @Test func headerSignsTheBaseString() throws {
        let key = try RSA.Signing.PrivateKey(pemRepresentation: MDESTestKeys.issuerA.privateKeyPEM)
        let signer = MastercardOAuth1Signer(consumerKey: "abc-123!xyz", signingKey: key)
        let body = Array(
            #"{"TokenSuspendRequest":{"TokenUniqueReference":"DWSPMC000000000fcb2f4136b2f4136a0532d2f4136a0532"}}"#.utf8
        )
        let url = "https://api.mastercard.com/mdes/csapi/v2/token/suspend"
        let header = try signer.authorizationHeader(
            method: "post", url: url, body: body, nonce: "n0nceN0nceN0nce1", timestamp: 1_780_000_000)
        #expect(header.hasPrefix("OAuth oauth_consumer_key=\"abc-123!xyz\",oauth_nonce=\"n0nceN0nceN0nce1\","))
        var parameters: [(String, String)] = []
        for item in header.dropFirst("OAuth ".count).split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1)
            parameters.append((String(parts[0]), String(parts[1].dropFirst().dropLast())))
        }
        #expect(
            parameters.map(\.0) == [
                "oauth_consumer_key", "oauth_nonce", "oauth_timestamp", "oauth_signature_method", "oauth_version",
                "oauth_body_hash", "oauth_signature",
            ])
        #expect(parameters[5].1 == MastercardOAuth1Signer.bodyHash(body))
        let signature = try #require(parameters.last?.1.removingPercentEncoding)
        let base = try MastercardOAuth1Signer.signatureBaseString(
            method: "POST", url: url, oauthParameters: Array(parameters.dropLast()))
        #expect(key.publicKey.isValidSignature(try BinaryEncoding.decodeBase64(signature), for: Array(base.utf8)))
        // Another body, another hash, another signature.
        let other = try signer.authorizationHeader(
            method: "POST", url: url, body: body + [0x20], nonce: "n0nceN0nceN0nce1", timestamp: 1_780_000_000)
        #expect(other != header)
    }

    @Test func noncesAreSixteenAlphanumerics() throws {
        var seen = Set<String>()
        for _ in 0..<200 {
            let nonce = try MastercardOAuth1Signer.makeNonce()
            #expect(nonce.utf8.count == 16)
            #expect(nonce.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
            seen.insert(nonce)
        }
        #expect(seen.count == 200)
    }
}
