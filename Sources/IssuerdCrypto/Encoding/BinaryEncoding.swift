import IssuerdCore

/// Strict text codecs for binary values: hex, base64 (RFC 4648 §4) and base64url (§5), and the
/// auto-detection that the API applies to PassKit's `certificates`, `nonce` and `nonceSignature`.
///
/// "Strict" means: no whitespace, no line breaks, no mixed alphabets, canonical padding, and the
/// unused low bits of the last character must be zero, so every accepted text has exactly one
/// byte value and every byte value exactly one text per encoding.
public enum BinaryEncoding: String, Sendable, CaseIterable {
    case hex
    case base64
    case base64URL = "base64url"

    /// The largest text any decoder accepts (1 MiB), so a caller cannot make us allocate freely.
    public static let maximumTextLength = 1 << 20

    /// Encodes bytes as lowercase hex.
    public static func hexString(_ bytes: some Sequence<UInt8>) -> String { Hex.lowercase(bytes) }

    /// `bytes` as lowercase hex, an array's without the generic form's cost.
    public static func hexString(_ bytes: [UInt8]) -> String { Hex.lowercase(bytes) }

    /// Encodes bytes as padded standard base64.
    public static func base64String(_ bytes: some Collection<UInt8>) -> String {
        encode(Array(bytes), alphabet: standardAlphabet, padding: true)
    }

    /// Encodes bytes as base64url, padded unless `padding` is false (JWT uses no padding).
    public static func base64URLString(_ bytes: some Collection<UInt8>, padding: Bool = false) -> String {
        encode(Array(bytes), alphabet: urlAlphabet, padding: padding)
    }

    /// Decodes hex (either case, not mixed within one text), even length.
    ///
    /// - Throws: ``CryptoError/Code/invalidEncoding``.
    public static func decodeHex(_ text: some StringProtocol) throws -> [UInt8] {
        let utf8 = Array(text.utf8)
        guard utf8.count <= maximumTextLength, utf8.count % 2 == 0 else {
            throw CryptoError(.invalidEncoding, "hex text must have an even length")
        }
        let hasLower = utf8.contains { (0x61...0x66).contains($0) }
        let hasUpper = utf8.contains { (0x41...0x46).contains($0) }
        guard !(hasLower && hasUpper) else {
            throw CryptoError(.invalidEncoding, "hex text mixes upper and lower case")
        }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = Hex.value(of: utf8[index]), let low = Hex.value(of: utf8[index + 1]) else {
                throw CryptoError(.invalidEncoding, "not a hex digit at offset \(index)")
            }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    /// Decodes padded standard base64 (`+`, `/`, `=`).
    ///
    /// - Throws: ``CryptoError/Code/invalidEncoding``.
    public static func decodeBase64(_ text: some StringProtocol) throws -> [UInt8] {
        try decode(Array(text.utf8), url: false, paddingRequired: true)
    }

    /// Decodes base64url (`-`, `_`); padding is optional but, when present, must be canonical.
    ///
    /// - Throws: ``CryptoError/Code/invalidEncoding``.
    public static func decodeBase64URL(_ text: some StringProtocol) throws -> [UInt8] {
        try decode(Array(text.utf8), url: true, paddingRequired: false)
    }

    /// ``decodeBase64URL(_:)`` of text already held as its UTF-8 bytes (a token's parts).
    ///
    /// - Throws: ``CryptoError/Code/invalidEncoding``.
    public static func decodeBase64URL(utf8 bytes: [UInt8]) throws -> [UInt8] {
        try decode(bytes, url: true, paddingRequired: false)
    }

    /// Decodes a PassKit value sent as hex, base64 or base64url, and says which one it was.
    ///
    /// Rules, in order (see docs/crypto.md for why they are unambiguous for PassKit's values):
    /// 1. a non-empty, even-length text of hex digits in one case is **hex**;
    /// 2. a text containing `-` or `_`, or unpadded with a length that is not a multiple of 4,
    ///    is **base64url**;
    /// 3. anything else is **padded standard base64**.
    /// A text mixing `+`/`/` with `-`/`_` is rejected as mixed.
    ///
    /// DER values (certificates, ECDSA `nonceSignature`) start with byte `0x30`, so their base64
    /// starts with `M` and can never look like hex; a 4-byte nonce in padded base64 ends in `==`.
    /// Residual ambiguity: an *unpadded* base64url text made only of hex digits is read as hex
    /// (about 1 in 830 unpadded 4-byte nonces); padded base64url is always exact.
    /// - Throws: ``CryptoError/Code/invalidEncoding`` naming the problem.
    public static func decodeDetectingEncoding(
        _ text: some StringProtocol
    ) throws -> (bytes: [UInt8], encoding: BinaryEncoding) {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty else { throw CryptoError(.invalidEncoding, "empty value") }
        guard utf8.count <= maximumTextLength else {
            throw CryptoError(.invalidEncoding, "value longer than \(maximumTextLength) characters")
        }
        let looksHex = utf8.count % 2 == 0 && utf8.allSatisfy { Hex.value(of: $0) != nil }
        if looksHex, let bytes = try? decodeHex(text) { return (bytes, .hex) }
        let hasStandard = utf8.contains { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }
        let hasURL = utf8.contains { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
        if hasStandard && hasURL { throw CryptoError(.invalidEncoding, "value mixes base64 and base64url alphabets") }
        if hasURL || (!utf8.contains(UInt8(ascii: "=")) && utf8.count % 4 != 0) {
            return (try decode(utf8, url: true, paddingRequired: false), .base64URL)
        }
        return (try decode(utf8, url: false, paddingRequired: true), .base64)
    }

    // MARK: - Implementation

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static func sextet(_ c: UInt8, url: Bool) -> UInt8? {
        switch c {
        case 0x41...0x5a: c - 0x41
        case 0x61...0x7a: c - 0x61 + 26
        case 0x30...0x39: c - 0x30 + 52
        case UInt8(ascii: "+") where !url: 62
        case UInt8(ascii: "/") where !url: 63
        case UInt8(ascii: "-") where url: 62
        case UInt8(ascii: "_") where url: 63
        default: nil
        }
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], padding: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            let b0 = bytes[index]
            let b1 = remaining > 1 ? bytes[index + 1] : 0
            let b2 = remaining > 2 ? bytes[index + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            if remaining > 1 {
                out.append(alphabet[Int((b1 & 0x0f) << 2 | b2 >> 6)])
            } else if padding {
                out.append(UInt8(ascii: "="))
            }
            if remaining > 2 { out.append(alphabet[Int(b2 & 0x3f)]) } else if padding { out.append(UInt8(ascii: "=")) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func decode(_ text: [UInt8], url: Bool, paddingRequired: Bool) throws -> [UInt8] {
        let name = url ? "base64url" : "base64"
        guard text.count <= maximumTextLength else { throw CryptoError(.invalidEncoding, "\(name) text too long") }
        var body = text[...]
        var padding = 0
        while body.last == UInt8(ascii: "=") {
            body = body.dropLast()
            padding += 1
        }
        guard padding <= 2 else { throw CryptoError(.invalidEncoding, "\(name) text has more than two '='") }
        if padding > 0 || paddingRequired {
            guard text.count % 4 == 0 else {
                throw CryptoError(.invalidEncoding, "\(name) text is not padded to a multiple of 4")
            }
        }
        guard body.count % 4 != 1 else { throw CryptoError(.invalidEncoding, "\(name) text has an impossible length") }
        var out = [UInt8]()
        out.reserveCapacity(body.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for (offset, c) in body.enumerated() {
            guard let value = sextet(c, url: url) else {
                throw CryptoError(.invalidEncoding, "character not in the \(name) alphabet at offset \(offset)")
            }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { throw CryptoError(.invalidEncoding, "\(name) text has non-zero trailing bits") }
        return out
    }
}
