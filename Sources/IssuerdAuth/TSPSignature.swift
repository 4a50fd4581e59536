import Foundation
import IssuerdCore
import IssuerdCrypto

/// The `X-Issuerd-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`
/// header (docs/openapi.yaml, `tspSignature`), parsed.
///
/// The header is taken apart strictly, so that malformed input never reaches the crypto; then
/// ``matching(body:key:)`` checks the HMAC and ``isWithin(_:of:)`` the time. The replay check
/// needs the database and is the API's (`VerifiedTSPSignature`).
package struct TSPSignature: Equatable {
    /// The header's name.
    package static let headerName = "X-Issuerd-Signature"

    /// The signing time in seconds since 1970.
    package let timestamp: Int64
    /// The `v1` signatures (a sender may send several while it rotates secrets), 32 bytes each.
    package let signatures: [[UInt8]]

    /// Parses the header; `nil` when it is malformed.
    ///
    /// Taken apart by bytes (an HTTP field value is bytes, and the scheme's names and values are
    /// ASCII): splitting it as a String, by characters, cost a TSP request more than its HMAC.
    package init?(header: String) {
        guard header.utf8.count <= 1024 else { return nil }
        var timestamp: Int64?
        var signatures: [[UInt8]] = []
        for item in Array(header.utf8).split(separator: UInt8(ascii: ",")) {
            let pair = Self.trimmingBlanks(item).split(separator: UInt8(ascii: "="), maxSplits: 1)
            guard pair.count == 2 else { return nil }
            switch String(decoding: pair[0], as: UTF8.self) {
            case "t":
                guard timestamp == nil, pair[1].count <= 12,
                    let value = Int64(String(decoding: pair[1], as: UTF8.self)), value > 0
                else {
                    return nil
                }
                timestamp = value
            case "v1":
                guard let bytes = Hex.bytes(pair[1]), bytes.count == 32 else { return nil }
                signatures.append(bytes)
            default:
                continue  // unknown schemes are ignored so new versions can be added alongside v1
            }
        }
        guard let timestamp, !signatures.isEmpty, signatures.count <= 4 else { return nil }
        self.timestamp = timestamp
        self.signatures = signatures
    }

    /// `bytes` without the spaces and tabs around them (optional whitespace in a header's list,
    /// RFC 9110 section 5.6.1).
    private static func trimmingBlanks(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }), let last = bytes.lastIndex(where: { !isBlank($0) })
        else { return [] }
        return bytes[first...last]
    }

    /// The first of the header's signatures that is the HMAC-SHA256 of `body` at its timestamp
    /// under `key`, each compared in constant time; nil when none is.
    package func matching(body: [UInt8], key: SymmetricKey) -> [UInt8]? {
        let expected = HMACSHA256.authenticationCode(
            for: Self.signedPayload(timestamp: timestamp, body: body), using: key)
        return signatures.first { constantTimeEquals($0, expected) }
    }

    /// Whether the signing time is at most `window` seconds from `now`, either way.
    package func isWithin(_ window: TimeInterval, of now: Date) -> Bool {
        abs(now.timeIntervalSince1970 - Double(timestamp)) <= window
    }

    /// The bytes the HMAC covers: `"<t>." + raw body`.
    package static func signedPayload(timestamp: Int64, body: [UInt8]) -> [UInt8] {
        Array("\(timestamp).".utf8) + body
    }

    /// The header value for `body` at `timestamp` (outbound webhooks and tests sign with it).
    package static func header(body: [UInt8], secret: String, timestamp: Int64) throws -> String {
        let mac = HMACSHA256.authenticationCode(
            for: signedPayload(timestamp: timestamp, body: body),
            using: try SymmetricKey(bytes: Array(secret.utf8)))
        return "t=\(timestamp),v1=\(BinaryEncoding.hexString(mac))"
    }
}
