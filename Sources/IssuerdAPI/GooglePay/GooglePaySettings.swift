import IssuerdCore

/// The settings of a push to Google Pay or Samsung Pay (docs/configuration.md, "Google Pay and
/// Samsung Pay"): Mastercard's encryption certificate and the fingerprint that names it, Visa's
/// encryption API key, shared secret and client app id, and the two OpenPGP keys of Google's own
/// opaque payment card. All optional; what is missing is answered, never guessed.
public struct GooglePaySettings: Sendable {
    /// Mastercard's encryption certificate, PEM (`ISSUERD_MDES_MASTERCARD_CERT`).
    public var mastercardCertificatePEM: String?
    /// The exact `publicKeyFingerprint` Mastercard gave with its certificate
    /// (`ISSUERD_MDES_MASTERCARD_KEY_FINGERPRINT`); unset: the SHA-1 of the certificate's DER, what
    /// MDES is reported to expect (unverified: docs/networks.md, open point 3).
    public var mastercardKeyFingerprint: String?
    /// The issuer's ASCII-armoured OpenPGP secret key (`ISSUERD_GOOGLE_OPC_SIGNING_KEY`, a path).
    public var googleSigningKey: Redacted<String>?
    /// Google's ASCII-armoured OpenPGP public key (`ISSUERD_GOOGLE_OPC_ENCRYPTION_KEY`, a path).
    public var googleEncryptionKey: String?
    /// Visa's encrypted payment instrument (`ISSUERD_VISA_*`); nil when none is set.
    var visa: VisaPushSettings?

    init(_ reader: ConfigurationReader) throws {
        mastercardCertificatePEM = try reader.pem("ISSUERD_MDES_MASTERCARD_CERT")
        mastercardKeyFingerprint = reader.string("ISSUERD_MDES_MASTERCARD_KEY_FINGERPRINT")
        googleSigningKey = try reader.pem("ISSUERD_GOOGLE_OPC_SIGNING_KEY").map(Redacted.init)
        googleEncryptionKey = try reader.pem("ISSUERD_GOOGLE_OPC_ENCRYPTION_KEY")
        visa = try VisaPushSettings.read(reader)
        guard (googleSigningKey == nil) == (googleEncryptionKey == nil) else {
            throw ConfigurationError(
                key: googleSigningKey == nil ? "ISSUERD_GOOGLE_OPC_SIGNING_KEY" : "ISSUERD_GOOGLE_OPC_ENCRYPTION_KEY",
                problem: "Google's opaque payment card needs both OpenPGP keys: set both or neither")
        }
    }
}
