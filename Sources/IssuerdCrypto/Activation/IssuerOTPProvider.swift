import Foundation

/// A generic issuer cryptographic OTP for token services that call the issuer back to validate
/// activation data: `IOTP1.<validUntil unix seconds>.<base64url HMAC-SHA256>` (ASCII), where the
/// MAC covers a version label, the card reference, the nonce, the expiry and the validity end,
/// each length-prefixed so no two inputs share an encoding.
///
/// It is the issuer's own format (no network defines it); ``verify(_:for:)`` is the check the
/// issuer's callback runs.
public struct IssuerOTPProvider: ActivationDataProvider {
    /// The prefix and version of the format.
    public static let prefix = "IOTP1"
    /// Default validity, matching the TAV recommendation.
    public static let defaultValidity: TimeInterval = 30 * 60

    public let name = "issuer_otp"
    private let key: SymmetricKey
    /// How long a value stays valid.
    public let validity: TimeInterval

    /// Creates the provider.
    ///
    /// - Parameters:
    ///   - key: At least 32 bytes (e.g. the key ring's activation-OTP key).
    ///   - validity: 60 s to 30 days.
    /// - Throws: ``CryptoError/Code/invalidKey`` for a short key, `invalidInput` for the validity.
    public init(key: SymmetricKey, validity: TimeInterval = defaultValidity) throws {
        guard key.byteCount >= 32 else { throw CryptoError(.invalidKey, "the OTP key must be at least 32 bytes") }
        guard validity >= 60, validity <= 30 * 24 * 3600 else {
            throw CryptoError(.invalidInput, "OTP validity must be between 60 seconds and 30 days")
        }
        self.key = key
        self.validity = validity
    }

    /// The OTP for the card.
    public func activationData(for request: ActivationDataRequest) throws -> [UInt8] {
        let validUntil = Int64(request.now.addingTimeInterval(validity).timeIntervalSince1970.rounded(.down))
        let mac = HMACSHA256.authenticationCode(for: Self.macInput(request, validUntil: validUntil), using: key)
        return Array("\(Self.prefix).\(validUntil).\(BinaryEncoding.base64URLString(mac))".utf8)
    }

    /// Checks activation data against the card, nonce and expiry of `request` at `request.now`.
    ///
    /// The MAC is compared in constant time before the expiry is looked at, so an attacker
    /// learns nothing from the order of checks.
    public func verify(_ activationData: [UInt8], for request: ActivationDataRequest) -> ActivationDataVerification {
        guard activationData.count <= 128 else { return .invalid }
        let parts = String(decoding: activationData, as: UTF8.self).split(
            separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == Self.prefix, parts[1].count <= 12, let validUntil = Int64(parts[1]),
            let mac = try? BinaryEncoding.decodeBase64URL(parts[2]), mac.count == HMACSHA256.byteCount
        else { return .invalid }
        let expected = Self.macInput(request, validUntil: validUntil)
        guard HMACSHA256.isValidAuthenticationCode(mac, authenticating: expected, using: key) else { return .invalid }
        return request.now.timeIntervalSince1970 <= TimeInterval(validUntil) ? .valid : .expired
    }

    private static func macInput(_ request: ActivationDataRequest, validUntil: Int64) -> [UInt8] {
        var out: [UInt8] = []
        for field in [
            Array(prefix.utf8), Array(request.cardReference.utf8), request.nonce,
            Array(request.expiration.compact.utf8), Array(String(validUntil).utf8),
        ] {
            out += withUnsafeBytes(of: UInt32(field.count).bigEndian) { Array($0) }
            out += field
        }
        return out
    }
}
