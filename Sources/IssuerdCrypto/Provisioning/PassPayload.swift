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
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, name.utf8.count <= Self.maximumNameByteCount else {
            throw CryptoError(.invalidInput, "cardholder name must be 1 to \(Self.maximumNameByteCount) UTF-8 bytes")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
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
        for (position, (key, value)) in fields.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            out += Self.jsonString(key)
            out.append(UInt8(ascii: ":"))
            out += Self.jsonString(value)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    public var description: String { "PassPayload(\(primaryAccountNumber.masked), \(expiration))" }

    /// One JSON string literal (RFC 8259 §7): quote, backslash and C0 controls escaped, every
    /// other character as raw UTF-8 (Hangul stays readable), `/` unescaped. Written out because
    /// a JSONEncoder per field cost ~7 µs of a ~90 µs seal.
    static func jsonString(_ value: String) -> [UInt8] {
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [UInt8(ascii: "\"")]
        out.reserveCapacity(value.utf8.count + 2)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0a: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0d: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x00..<0x20: out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
        return out
    }
}
