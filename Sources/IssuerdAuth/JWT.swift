import Foundation
import IssuerdCore
import IssuerdCrypto

/// A compact JWS (RFC 7515 §7.1) split into its parts, with the claims issuerd reads.
///
/// Parsing does not verify anything: ``AppTokenVerifier`` checks the signature with the
/// configured algorithm and then the claims.
package struct JWT {
    /// `BASE64URL(header) || '.' || BASE64URL(payload)`, the bytes the signature covers.
    package let signingInput: [UInt8]
    package let signature: [UInt8]
    /// The `alg` header parameter.
    package let algorithm: String
    /// The `sub` claim: the customer id.
    package let subject: String?
    /// The `exp` claim in seconds since 1970.
    package let expiresAt: Double?
    /// The `nbf` claim in seconds since 1970.
    package let notBefore: Double?
    /// The `iat` claim in seconds since 1970.
    package let issuedAt: Double?
    /// The `iss` claim.
    package let issuer: String?
    /// The `aud` claim: one string or an array of them (RFC 7519 §4.1.3); nil when absent or of
    /// another shape.
    package let audience: [String]?

    /// Longest token accepted, long before any base64 decoding.
    static let maximumLength = 8192

    /// Splits and decodes a compact token; `nil` for anything malformed.
    package init?(compact token: String) {
        guard token.utf8.count <= Self.maximumLength else { return nil }
        // Split over the bytes: splitting a String compares characters, grapheme by grapheme.
        let bytes = Array(token.utf8)
        guard let firstDot = bytes.firstIndex(of: UInt8(ascii: ".")),
            let secondDot = bytes[(firstDot + 1)...].firstIndex(of: UInt8(ascii: ".")),
            !bytes[(secondDot + 1)...].contains(UInt8(ascii: ".")),
            let headerBytes = try? BinaryEncoding.decodeBase64URL(utf8: Array(bytes[..<firstDot])),
            let payloadBytes = try? BinaryEncoding.decodeBase64URL(utf8: Array(bytes[(firstDot + 1)..<secondDot])),
            let signature = try? BinaryEncoding.decodeBase64URL(utf8: Array(bytes[(secondDot + 1)...])),
            let header = Members(headerBytes), let payload = Members(payloadBytes),
            let algorithm = header.string("alg")
        else { return nil }
        // RFC 7515 §4.1.11: a token naming a critical extension we do not understand is invalid.
        if header.contains("crit") { return nil }
        self.signingInput = Array(bytes[..<secondDot])
        self.signature = signature
        self.algorithm = algorithm
        self.subject = payload.string("sub")
        self.expiresAt = payload.number("exp")
        self.notBefore = payload.number("nbf")
        self.issuedAt = payload.number("iat")
        self.issuer = payload.string("iss")
        self.audience = payload.strings("aud")
    }

    /// A header or claims object, parsed in one pass (``JSONValue/parse(bytes:)``: every request
    /// carries a token, and `JSONSerialization` was most of reading one), or by
    /// `JSONSerialization` where that declines, so the same tokens are read the same way.
    private enum Members {
        case parsed([String: JSONValue])
        case foundation([String: Any])

        init?(_ bytes: [UInt8]) {
            if let value = bytes.withUnsafeBufferPointer({ JSONValue.parse(bytes: $0) }) {
                guard case .object(let members) = value else { return nil }
                self = .parsed(members)
            } else {
                guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
                    return nil
                }
                self = .foundation(object)
            }
        }

        func contains(_ key: String) -> Bool {
            switch self {
            case .parsed(let members): members[key] != nil
            case .foundation(let object): object[key] != nil
            }
        }

        func string(_ key: String) -> String? {
            switch self {
            case .parsed(let members): if case .string(let text)? = members[key] { text } else { nil }
            case .foundation(let object): object[key] as? String
            }
        }

        /// A string, or an array of nothing but strings.
        func strings(_ key: String) -> [String]? {
            switch self {
            case .parsed(let members):
                switch members[key] {
                case .string(let text)?: return [text]
                case .array(let items)?:
                    let texts = items.compactMap { if case .string(let text) = $0 { text } else { nil } }
                    return texts.count == items.count ? texts : nil
                default: return nil
                }
            case .foundation(let object):
                if let text = object[key] as? String { return [text] }
                return object[key] as? [String]
            }
        }

        /// A NumericDate (RFC 7519 §2). `JSONSerialization` also reads a boolean as 1 or 0;
        /// either way such a token is expired, or its `nbf` long past.
        func number(_ key: String) -> Double? {
            switch self {
            case .parsed(let members):
                switch members[key] {
                case .int(let seconds)?: Double(seconds)
                case .double(let seconds)?: seconds
                default: nil
                }
            case .foundation(let object): (object[key] as? NSNumber)?.doubleValue
            }
        }
    }
}
