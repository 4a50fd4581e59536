import IssuerdCore
import IssuerdCrypto

/// Mastercard's encryption key, to which issuerd encrypts what an answer carries encrypted (the
/// Authorize Service answer's `encryptedPayload`, CSAPI `EncryptedAccountInformation`).
public struct MastercardEncryptionKey: Sendable {
    /// Which fingerprint goes into `publicKeyFingerprint`.
    public enum FingerprintForm: String, Sendable, CaseIterable {
        /// SHA-1 of the certificate's DER: what MDES is reported to require (docs/networks.md, open point 3).
        case certificateSHA1 = "certificate-sha1"
        /// SHA-256 of the certificate's DER (Mastercard's libraries' certificate fingerprint).
        case certificateSHA256 = "certificate-sha256"
        /// SHA-1 of the DER `SubjectPublicKeyInfo`.
        case publicKeySHA1 = "public-key-sha1"
        /// SHA-256 of the DER `SubjectPublicKeyInfo` (Mastercard's libraries' key fingerprint).
        case publicKeySHA256 = "public-key-sha256"
    }

    /// The RSA key the AES key is wrapped to.
    public let publicKey: RSA.Encryption.PublicKey
    /// The `publicKeyFingerprint` sent, lowercase hex.
    public let fingerprint: String

    /// The key certified by `certificate`, named by the fingerprint of `form`.
    ///
    /// - Throws: ``CryptoError`` with `invalid_key` unless the certificate holds an RSA key of
    ///   at least 2048 bits.
    public init(certificate: X509Certificate, fingerprint form: FingerprintForm = .certificateSHA1) throws {
        publicKey = try certificate.rsaEncryptionKey()
        let digest: [UInt8]
        switch form {
        case .certificateSHA1: digest = certificate.sha1Fingerprint
        case .certificateSHA256: digest = certificate.sha256Fingerprint
        case .publicKeySHA1: digest = try publicKey.sha1Fingerprint
        case .publicKeySHA256: digest = try publicKey.sha256Fingerprint
        }
        fingerprint = BinaryEncoding.hexString(digest)
    }

    /// The key certified by `certificate`, named by the exact fingerprint Mastercard gave with it.
    ///
    /// - Throws: ``MDESKeyError`` unless `fingerprint` is 32–64 hex digits; ``CryptoError`` for
    ///   a certificate without a usable RSA key.
    public init(certificate: X509Certificate, fingerprint: String) throws {
        guard EncryptedPayload.fingerprintLengths.contains(fingerprint.utf8.count),
            fingerprint.utf8.allSatisfy({ Hex.value(of: $0) != nil })
        else { throw MDESKeyError("a Mastercard key fingerprint is 32 to 64 hex digits") }
        publicKey = try certificate.rsaEncryptionKey()
        self.fingerprint = fingerprint.lowercased()
    }
}
