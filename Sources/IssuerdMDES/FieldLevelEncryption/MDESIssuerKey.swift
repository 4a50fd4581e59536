import IssuerdCrypto

/// One issuer encryption key that opens inbound `encryptedPayload`s, with every fingerprint
/// MDES may name it by: SHA-1 and SHA-256 of the DER `SubjectPublicKeyInfo`, and, when the
/// certificate is known, SHA-1 and SHA-256 of the certificate's DER (docs/networks.md, open point 3).
public struct MDESIssuerKey: Sendable, CustomStringConvertible {
    /// What unwraps the AES key: a PEM key in memory or a key in the HSM.
    public let unwrapper: any RSAKeyUnwrapping
    /// The fingerprints in lowercase hex, the certificate's first when there is one.
    public let fingerprints: [String]
    /// A name for the log: the SHA-256 key fingerprint's first 16 hex digits.
    public let name: String

    /// A key whose private half is `unwrapper` and whose public half is `publicKey`.
    ///
    /// - Parameters:
    ///   - unwrapper: The private key (in memory or in the HSM).
    ///   - publicKey: Its public key.
    ///   - certificate: The certificate on-boarded with Mastercard, when known; its key must be
    ///     `publicKey`.
    /// - Throws: ``MDESKeyError`` when the certificate certifies another key.
    public init(
        unwrapper: any RSAKeyUnwrapping, publicKey: RSA.Encryption.PublicKey, certificate: X509Certificate?
    )
        throws
    {
        let spki = try publicKey.subjectPublicKeyInfoDER
        var fingerprints: [String] = []
        if let certificate {
            guard try certificate.subjectPublicKeyInfoDER == spki else {
                throw MDESKeyError("the certificate does not certify this private key")
            }
            fingerprints += [
                BinaryEncoding.hexString(certificate.sha1Fingerprint),
                BinaryEncoding.hexString(certificate.sha256Fingerprint),
            ]
        }
        let keySHA256 = BinaryEncoding.hexString(SHA256.hash(spki))
        fingerprints += [BinaryEncoding.hexString(SHA1.hash(spki)), keySHA256]
        self.unwrapper = unwrapper
        self.fingerprints = fingerprints
        self.name = String(keySHA256.prefix(16))
    }

    /// A key from a PEM file's text: an RSA private key (`PRIVATE KEY` or `RSA PRIVATE KEY`,
    /// at least 2048 bits) and optionally its `CERTIFICATE` in the same text.
    ///
    /// - Throws: ``MDESKeyError`` or ``CryptoError`` when the text holds no usable RSA key or a
    ///   certificate of another key.
    public init(pemRepresentation pem: String) throws {
        let privateKey = try RSA.Encryption.PrivateKey(pemRepresentation: pem)
        let certificate =
            pem.contains("-----BEGIN CERTIFICATE-----") ? try X509Certificate(pemRepresentation: pem) : nil
        try self.init(unwrapper: privateKey, publicKey: privateKey.publicKey, certificate: certificate)
    }

    public var description: String { "MDESIssuerKey(\(name), \(unwrapper.keySizeInBits) bits)" }
}

/// A key that cannot serve as an MDES issuer key; the message names no secret.
public struct MDESKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, safe to show.
    public let description: String
    /// Wraps a message.
    public init(_ description: String) { self.description = description }
}
