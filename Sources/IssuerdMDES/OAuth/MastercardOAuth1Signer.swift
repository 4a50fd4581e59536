import Foundation
import IssuerdCrypto

/// Signs requests to Mastercard's APIs (the MDES Customer Service API) with OAuth 1.0a
/// RSA-SHA256 and a body hash, exactly as Mastercard's own signers do (Mastercard's
/// oauth1-signer-java `OAuth.java`, `Util.java`).
///
/// The header is `OAuth k="v",…` with the parameters in the order Mastercard's signers write them:
/// `oauth_consumer_key`, `oauth_nonce`, `oauth_timestamp`, `oauth_signature_method`,
/// `oauth_version`, `oauth_body_hash`, `oauth_signature`.
public struct MastercardOAuth1Signer: Sendable {
    /// The consumer key of the Mastercard Developers project (contains `!`; sent as it is).
    public let consumerKey: String
    /// The RSA key that signs (in memory or in the HSM).
    public let signingKey: any RSASigningKey

    /// A signer for `consumerKey` with `signingKey`.
    public init(consumerKey: String, signingKey: any RSASigningKey) {
        self.consumerKey = consumerKey
        self.signingKey = signingKey
    }

    /// The `Authorization` header value for one request.
    ///
    /// - Parameters:
    ///   - method: The HTTP method (uppercased in the base string).
    ///   - url: The absolute URL, query included, exactly as it will be sent.
    ///   - body: The exact body bytes that will be sent (empty for none).
    ///   - nonce: 16 characters of `[0-9A-Za-z]`; fresh and random unless a test fixes it.
    ///   - timestamp: Unix seconds; now unless a test fixes it.
    /// - Throws: ``MastercardOAuthError`` for a URL that is not absolute http(s); the signer's error.
    public func authorizationHeader(
        method: String, url: String, body: [UInt8], nonce: String? = nil, timestamp: Int? = nil
    ) throws -> String {
        let parameters: [(String, String)] = [
            ("oauth_consumer_key", consumerKey),
            ("oauth_nonce", try nonce ?? Self.makeNonce()),
            ("oauth_timestamp", String(timestamp ?? Int(Date.now.timeIntervalSince1970))),
            ("oauth_signature_method", "RSA-SHA256"),
            ("oauth_version", "1.0"),
            ("oauth_body_hash", Self.bodyHash(body)),
        ]
        let baseString = try Self.signatureBaseString(method: method, url: url, oauthParameters: parameters)
        let signature = try signingKey.signature(for: Array(baseString.utf8))
        let signed = parameters + [("oauth_signature", Self.percentEncode(BinaryEncoding.base64String(signature)))]
        return "OAuth " + signed.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ",")
    }

    /// Padded standard Base64 of SHA-256 over the body bytes (the empty string's hash for no body).
    public static func bodyHash(_ body: [UInt8]) -> String {
        BinaryEncoding.base64String(SHA256.hash(body))
    }

    /// `METHOD&pct(baseURI)&pct(parameters)`: the query's parameters as they appear in the URL
    /// plus the `oauth_*` parameters inserted raw (not encoded on their own: Mastercard's quirk,
    /// so `+`, `/`, `=` of the body hash are encoded exactly once), sorted by name and then by
    /// value in byte order, joined `k=v` with `&`.
    ///
    /// - Throws: ``MastercardOAuthError`` for a URL that is not absolute http(s).
    public static func signatureBaseString(
        method: String, url: String, oauthParameters: [(String, String)]
    ) throws
        -> String
    {
        let parsed = try BaseURI(url)
        var parameters = parsed.query
        parameters += oauthParameters
        parameters.sort { lhs, rhs in
            lhs.0 == rhs.0
                ? Array(lhs.1.utf8).lexicographicallyPrecedes(rhs.1.utf8)
                : Array(lhs.0.utf8).lexicographicallyPrecedes(rhs.0.utf8)
        }
        let parameterString = parameters.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        return method.uppercased() + "&" + percentEncode(parsed.normalized) + "&" + percentEncode(parameterString)
    }

    /// RFC 3986 percent-encoding of UTF-8: `A–Z a–z 0–9 - . _ ~` kept, everything else `%XX`.
    public static func percentEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: out.append(byte)
            default: out += [0x25, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// 16 characters of `[0-9A-Za-z]` from the DRBG (rejection sampling keeps them uniform).
    public static func makeNonce() throws -> String {
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        var out: [UInt8] = []
        while out.count < 16 {
            for byte in try SecureRandom.bytes(count: 32) where byte < 248 && out.count < 16 {
                out.append(alphabet[Int(byte) % 62])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A URL the signer cannot use; names the problem, not the URL's query values.
public struct MastercardOAuthError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
