import Foundation
import IssuerdCrypto

/// A compact JWS (RFC 7515 §7.1) split into its parts, with the claims issuerd reads.
///
/// Parsing does not verify anything: ``AppTokenVerifier`` checks the signature with the
/// configured algorithm and then the time claims.
struct JWT {
    /// `BASE64URL(header) || '.' || BASE64URL(payload)`, the bytes the signature covers.
    let signingInput: [UInt8]
    let signature: [UInt8]
    /// The `alg` header parameter.
    let algorithm: String
    /// The `sub` claim: the customer id.
    let subject: String?
    /// The `exp` claim in seconds since 1970.
    let expiresAt: Double?
    /// The `nbf` claim in seconds since 1970.
    let notBefore: Double?

    /// Longest token accepted, long before any base64 decoding.
    static let maximumLength = 8192

    /// Splits and decodes a compact token; `nil` for anything malformed.
    init?(compact token: String) {
        guard token.utf8.count <= Self.maximumLength else { return nil }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = try? BinaryEncoding.decodeBase64URL(parts[0]),
            let payloadBytes = try? BinaryEncoding.decodeBase64URL(parts[1]),
            let signature = try? BinaryEncoding.decodeBase64URL(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
            let payload = try? JSONSerialization.jsonObject(with: Data(payloadBytes)) as? [String: Any],
            let algorithm = header["alg"] as? String
        else { return nil }
        // RFC 7515 §4.1.11: a token naming a critical extension we do not understand is invalid.
        if header["crit"] != nil { return nil }
        self.signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        self.signature = signature
        self.algorithm = algorithm
        self.subject = payload["sub"] as? String
        self.expiresAt = (payload["exp"] as? NSNumber)?.doubleValue
        self.notBefore = (payload["nbf"] as? NSNumber)?.doubleValue
    }
}
