import IssuerdCore
import IssuerdCrypto
import IssuerdMDES

/// The keys a reissued card's new account data is encrypted to (docs/configuration.md, "Card
/// reissue"): Mastercard's encryption certificate (`ISSUERD_MDES_MASTERCARD_CERT`, named by
/// `ISSUERD_MDES_MASTERCARD_KEY_FINGERPRINT` when set) for the Customer Service API's
/// `/token/update`, and the TSP gateway's (`ISSUERD_TSP_ACCOUNT_CERT`) for its `pan_lifecycle`
/// notification. Either may be unset; a reissue that needs the missing one is refused.
public struct ReissueSettings: Sendable {
    /// Mastercard's key; nil when `ISSUERD_MDES_MASTERCARD_CERT` is unset.
    public var mastercardKey: MastercardEncryptionKey?
    /// The TSP gateway's key; nil when `ISSUERD_TSP_ACCOUNT_CERT` is unset.
    public var tspKey: MastercardEncryptionKey?

    /// Creates the value from every stored property.
    public init(mastercardKey: MastercardEncryptionKey?, tspKey: MastercardEncryptionKey?) {
        self.mastercardKey = mastercardKey
        self.tspKey = tspKey
    }

    /// Reads the settings.
    ///
    /// - Throws: ``ConfigurationError`` for a certificate that is not an RSA key of at least 2048
    ///   bits, or a malformed fingerprint.
    public init(_ reader: ConfigurationReader) throws {
        mastercardKey = try Self.key(
            reader, "ISSUERD_MDES_MASTERCARD_CERT", fingerprintKey: "ISSUERD_MDES_MASTERCARD_KEY_FINGERPRINT")
        tspKey = try Self.key(reader, "ISSUERD_TSP_ACCOUNT_CERT", fingerprintKey: nil)
    }

    private static func key(
        _ reader: ConfigurationReader, _ key: String, fingerprintKey: String?
    ) throws -> MastercardEncryptionKey? {
        guard let pem = try reader.pem(key) else { return nil }
        guard let certificate = try? X509Certificate(pemRepresentation: pem) else {
            throw ConfigurationError(key: key, problem: "must be a PEM certificate")
        }
        let fingerprint = fingerprintKey.flatMap { reader.string($0) }
        do {
            return try fingerprint.map { try MastercardEncryptionKey(certificate: certificate, fingerprint: $0) }
                ?? MastercardEncryptionKey(certificate: certificate)
        } catch {
            throw ConfigurationError(key: fingerprint == nil ? key : fingerprintKey ?? key, problem: "\(error)")
        }
    }
}
