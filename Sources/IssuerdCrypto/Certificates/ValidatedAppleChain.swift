import Foundation

/// A certificate chain that passed every check of ``AppleCertificateChainVerifier``.
///
/// Only the verifier can create one, so holding a value is proof of verification (the
/// swift-certificates pattern); the encryptors accept nothing else.
public struct ValidatedAppleChain: Sendable {
    /// The key to encrypt to, taken from the leaf carrying Apple's marker OID.
    public enum RecipientKey: Sendable {
        /// ECC_V2: an EC P-256 key, checked once at verification.
        case p256(P256.KeyAgreement.PublicKey)
        /// RSA_V2: an RSA key of at least 2048 bits.
        case rsa(RSA.Encryption.PublicKey)
    }

    /// The leaf's public key.
    public let recipientKey: RecipientKey
    /// The leaf's notBefore.
    public let leafNotBefore: Date
    /// The leaf's notAfter (Apple rotates the leaf about every two years).
    public let leafNotAfter: Date
    /// SHA-256 of the leaf DER.
    public let leafFingerprint: [UInt8]
    /// The leaf's subject common name.
    public let leafCommonName: String
    /// The intermediate's subject common name.
    public let intermediateCommonName: String
    /// The trust profile that accepted the chain.
    public let trustProfileName: String

    /// The leaf fingerprint as lowercase hex.
    public var leafFingerprintHex: String { BinaryEncoding.hexString(leafFingerprint) }

    init(
        recipientKey: RecipientKey, leafNotBefore: Date, leafNotAfter: Date, leafFingerprint: [UInt8],
        leafCommonName: String,
        intermediateCommonName: String, trustProfileName: String
    ) {
        self.recipientKey = recipientKey
        self.leafNotBefore = leafNotBefore
        self.leafNotAfter = leafNotAfter
        self.leafFingerprint = leafFingerprint
        self.leafCommonName = leafCommonName
        self.intermediateCommonName = intermediateCommonName
        self.trustProfileName = trustProfileName
    }
}

/// The outcome of a chain verification: an expected negative outcome is a value, not a throw.
public enum AppleChainVerification: Sendable {
    /// Every check passed.
    case valid(ValidatedAppleChain)
    /// The named check failed.
    case invalid(ChainFailure)

    /// The chain, when valid.
    public var chain: ValidatedAppleChain? {
        if case .valid(let chain) = self { chain } else { nil }
    }

    /// The failure, when invalid.
    public var failure: ChainFailure? {
        if case .invalid(let failure) = self { failure } else { nil }
    }
}
