import COpenSSL
import Foundation

/// One X.509 certificate, parsed once: its DER, its subject public key and the fingerprints by
/// which Mastercard names a key (docs/networks.md, open point 3).
public struct X509Certificate: Sendable {
    let handle: X509Handle

    /// Parses strict DER (exactly one certificate, at most 16 KiB).
    ///
    /// - Throws: ``CryptoError/Code/invalidEncoding`` for anything else.
    public init(derRepresentation der: [UInt8]) throws {
        guard let handle = X509Handle(der: der) else {
            throw CryptoError(.invalidEncoding, "not one DER certificate")
        }
        self.handle = handle
    }

    /// Parses the first `CERTIFICATE` block of a PEM text (a key file may carry its certificate).
    ///
    /// - Throws: ``CryptoError/Code/invalidEncoding`` when the text holds no readable certificate.
    public init(pemRepresentation pem: String) throws {
        guard let der = try CertificateDecoding.pemCertificates(pem).first else {
            throw CryptoError(.invalidEncoding, "no PEM CERTIFICATE block")
        }
        try self.init(derRepresentation: der)
    }

    /// The certificate's DER.
    public var derRepresentation: [UInt8] { handle.der }

    /// The DER `SubjectPublicKeyInfo` of the certified key.
    public var subjectPublicKeyInfoDER: [UInt8] {
        get throws { try KeyCoding.publicKeyDER(try handle.publicKey()) }
    }

    /// SHA-1 of the certificate's DER (the form MDES is reported to use for `publicKeyFingerprint`).
    public var sha1Fingerprint: [UInt8] { SHA1.hash(handle.der) }
    /// SHA-256 of the certificate's DER (Mastercard's libraries' "certificate fingerprint").
    public var sha256Fingerprint: [UInt8] { SHA256.hash(handle.der) }

    /// The end of the validity period.
    public var notAfter: Date? { handle.notAfter }

    /// The certified key as an RSA key-wrapping key.
    ///
    /// - Throws: ``CryptoError/Code/invalidKey`` unless it is RSA of at least 2048 bits.
    public func rsaEncryptionKey() throws -> RSA.Encryption.PublicKey {
        let key = try handle.publicKey()
        try KeyCoding.requireRSA(key)
        return RSA.Encryption.PublicKey(handle: key)
    }
}

extension RSA.Encryption.PublicKey {
    /// The DER `SubjectPublicKeyInfo`.
    public var subjectPublicKeyInfoDER: [UInt8] {
        get throws { try KeyCoding.publicKeyDER(handle) }
    }

    /// SHA-1 of the DER `SubjectPublicKeyInfo`.
    public var sha1Fingerprint: [UInt8] {
        get throws { SHA1.hash(try subjectPublicKeyInfoDER) }
    }

    /// SHA-256 of the DER `SubjectPublicKeyInfo` (Mastercard's libraries' "key fingerprint").
    public var sha256Fingerprint: [UInt8] {
        get throws { SHA256.hash(try subjectPublicKeyInfoDER) }
    }
}
