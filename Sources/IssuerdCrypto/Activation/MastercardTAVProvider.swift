import Foundation

/// Mastercard Tokenization Authentication Value, version 3: a JSON object whose `signature` is
/// RSA-SHA256 (PKCS#1 v1.5) over `accountNumber|accountExpiry|dataValidUntilTimestamp`, with
/// `accountExpiry` as `MMYY` and the timestamp in ISO 8601 UTC (`YYYY-MM-DDThh:mm:ssZ`).
///
/// The returned bytes are the TAV JSON itself (see ``ActivationDataProvider``). The signing key
/// is the issuer's TAV key whose public half is registered with MDES: in process
/// (``RSA/Signing/PrivateKey``) or in an HSM (any ``RSASigningKey``).
public struct MastercardTAVProvider: ActivationDataProvider {
    /// Mastercard's limit for `dataValidUntilTimestamp`.
    public static let maximumValidity: TimeInterval = 30 * 24 * 3600
    /// Mastercard's recommendation: now + 30 minutes.
    public static let defaultValidity: TimeInterval = 30 * 60
    /// The fields signed, in order.
    public static let includedFieldsInOrder = "accountNumber|accountExpiry|dataValidUntilTimestamp"

    public let name = "mastercard_tav"
    private let signingKey: any RSASigningKey
    /// How long a TAV stays valid.
    public let validity: TimeInterval

    /// Creates the provider.
    ///
    /// - Parameters:
    ///   - signingKey: The issuer's TAV RSA key (≥ 2048 bits).
    ///   - validity: Seconds until `dataValidUntilTimestamp`, 60 s to 30 days (default 30 minutes).
    /// - Throws: ``CryptoError/Code/invalidInput`` for a validity outside that range.
    public init(signingKey: RSA.Signing.PrivateKey, validity: TimeInterval = defaultValidity) throws {
        try self.init(signer: signingKey, validity: validity)
    }

    /// Creates the provider over any PKCS#1 v1.5 SHA-256 signer, e.g. a key in an HSM.
    ///
    /// - Parameters:
    ///   - signer: Signs `PAN|MMYY|timestamp`; its errors propagate (no TAV without a signature).
    ///   - validity: Seconds until `dataValidUntilTimestamp`, 60 s to 30 days.
    /// - Throws: ``CryptoError/Code/invalidInput`` for a validity outside that range.
    public init(signer: any RSASigningKey, validity: TimeInterval = defaultValidity) throws {
        guard validity >= 60, validity <= Self.maximumValidity else {
            throw CryptoError(.invalidInput, "TAV validity must be between 60 seconds and 30 days")
        }
        self.signingKey = signer
        self.validity = validity
    }

    /// The TAV JSON for the card.
    public func activationData(for request: ActivationDataRequest) throws -> [UInt8] {
        let validUntil = Self.timestamp(request.now.addingTimeInterval(validity))
        let signed = Self.signedData(
            pan: request.primaryAccountNumber.unsafeDigits, expiry: request.expiration.compact, validUntil: validUntil)
        let signature = try signingKey.signature(for: signed)
        return Self.json(validUntil: validUntil, signature: BinaryEncoding.base64String(signature))
    }

    /// The TAV JSON, byte for byte what `JSONEncoder` with sorted keys and unescaped slashes
    /// writes (a test holds the two equal), without its per-call cost on the provisioning path.
    /// Every value is ASCII without `"` or `\\` (fixed strings, a timestamp, base64).
    static func json(validUntil: String, signature: String) -> [UInt8] {
        Array(
            (#"{"dataValidUntilTimestamp":""# + validUntil + #"","includedFieldsInOrder":""# + includedFieldsInOrder
                + #"","signature":""# + signature + #"","signatureAlgorithm":"RSA-SHA256","version":"3"}"#).utf8)
    }

    /// The bytes Mastercard verifies: `PAN|MMYY|timestamp`.
    public static func signedData(pan: String, expiry: String, validUntil: String) -> [UInt8] {
        Array("\(pan)|\(expiry)|\(validUntil)".utf8)
    }

    /// ISO 8601 UTC with seconds and `Z`, the first form Mastercard lists (`gmtime_r`: a
    /// formatter per call cost more than the RSA signature's hashing and padding together).
    public static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    /// The TAV JSON fields.
    public struct TAV: Codable, Sendable, Equatable {
        /// "3".
        public let version: String
        /// "RSA-SHA256".
        public let signatureAlgorithm: String
        /// When the TAV stops being honoured.
        public let dataValidUntilTimestamp: String
        /// "accountNumber|accountExpiry|dataValidUntilTimestamp".
        public let includedFieldsInOrder: String
        /// Base64 of the RSA signature.
        public let signature: String
    }
}
