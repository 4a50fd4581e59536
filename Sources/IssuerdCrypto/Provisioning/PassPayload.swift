import Foundation
import IssuerdCore

/// The plaintext inside `encryptedPassData`: a UTF-8 JSON object with Apple's five string
/// fields, nonce and signature in hex (provisioning spec section 3).
///
/// Keys are written in Apple's documented order (`primaryAccountNumber`, `expiration`, `name`,
/// `nonce`, `nonceSignature`), compact, with `/` unescaped, so the bytes are reproducible and
/// match the known-answer vectors. The PAN never appears in `description`.
public struct PassPayload: Sendable, CustomStringConvertible {
    /// The most UTF-8 bytes accepted for a cardholder name.
    public static let maximumNameByteCount = 256
    /// Bounds for PassKit's nonce (4 bytes in practice).
    public static let nonceByteRange = 1...64
    /// Bounds for PassKit's nonce signature (an ECDSA DER signature in practice).
    public static let nonceSignatureByteRange = 1...1024

    /// The card number.
    public let primaryAccountNumber: PrimaryAccountNumber
    /// The expiry.
    public let expiration: CardExpiration
    /// The cardholder name, any script (e.g. Hangul).
    public let name: String
    /// PassKit's nonce bytes.
    public let nonce: [UInt8]
    /// PassKit's nonce signature bytes.
    public let nonceSignature: [UInt8]

    /// Validates and builds a payload.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for an empty or oversized name (or one with
    ///   control characters), or a nonce or signature outside its bounds.
    public init(
        primaryAccountNumber: PrimaryAccountNumber, expiration: CardExpiration, name: String, nonce: [UInt8],
        nonceSignature: [UInt8]
    ) throws {
        guard Self.hasNonBlank(name), name.utf8.count <= Self.maximumNameByteCount else {
            throw CryptoError(.invalidInput, "cardholder name must be 1 to \(Self.maximumNameByteCount) UTF-8 bytes")
        }
        guard !name.containsControlCharacter else {
            throw CryptoError(.invalidInput, "cardholder name contains control characters")
        }
        guard Self.nonceByteRange.contains(nonce.count) else {
            throw CryptoError(.invalidInput, "nonce of \(nonce.count) bytes")
        }
        guard Self.nonceSignatureByteRange.contains(nonceSignature.count) else {
            throw CryptoError(.invalidInput, "nonceSignature of \(nonceSignature.count) bytes")
        }
        self.primaryAccountNumber = primaryAccountNumber
        self.expiration = expiration
        self.name = name
        self.nonce = nonce
        self.nonceSignature = nonceSignature
    }

    /// Whether `name` has a character other than `CharacterSet.whitespaces`: what trimming those
    /// and finding something left said, without bridging the name to an `NSString` (about
    /// 10,000 instructions a request). Of ASCII that set holds only the space and the tab.
    static func hasNonBlank(_ name: String) -> Bool {
        name.unicodeScalars.contains { scalar in
            scalar.isASCII ? scalar != " " && scalar != "\t" : !CharacterSet.whitespaces.contains(scalar)
        }
    }

    /// The exact plaintext bytes to encrypt. Callers should drop them right after sealing.
    public func jsonBytes() -> [UInt8] {
        let fields: [(String, String)] = [
            ("primaryAccountNumber", primaryAccountNumber.unsafeDigits),
            ("expiration", expiration.slashed),
            ("name", name),
            ("nonce", BinaryEncoding.hexString(nonce)),
            ("nonceSignature", BinaryEncoding.hexString(nonceSignature)),
        ]
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(fields.reduce(2) { $0 + $1.0.utf8.count + $1.1.utf8.count + 6 } + 32)
        for (position, (key, value)) in fields.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            JSONText.appendString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONText.appendString(value, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    public var description: String { "PassPayload(\(primaryAccountNumber.masked), \(expiration))" }

    /// One JSON string literal (RFC 8259 §7), as ``jsonBytes()`` writes each field: quote,
    /// backslash and C0 controls escaped, every other character as raw UTF-8 (Hangul stays
    /// readable), `/` unescaped (`JSONText.appendString`). Written out because a JSONEncoder per
    /// field cost ~7 µs of a ~90 µs seal.
    static func jsonString(_ value: String) -> [UInt8] {
        var out: [UInt8] = []
        JSONText.appendString(value, to: &out)
        return out
    }
}
