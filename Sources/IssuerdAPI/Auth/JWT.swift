import Foundation

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
            let headerBytes = Base64URL.decode(parts[0]),
            let payloadBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
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

/// base64url without padding (RFC 4648 §5), as JOSE uses it.
enum Base64URL {
    /// Decodes unpadded (or padded) base64url; `nil` on any other character.
    static func decode(_ text: Substring) -> [UInt8]? {
        guard text.utf8.allSatisfy({ byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x2D || byte == 0x5F || byte == 0x3D
        }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 = base64.replacingOccurrences(of: "=", with: "")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map(Array.init)
    }

    /// Encodes without padding.
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
