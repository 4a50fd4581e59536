/// NIST P-256 keys, separated by purpose as in swift-crypto: a key-agreement key cannot sign and
/// a signing key cannot take part in ECDH.
public enum P256 {
    /// ECDH keys (ECC_V2 ephemeral keys, Apple's leaf key).
    public enum KeyAgreement {}
    /// ECDSA keys (ES256 JWTs, development certificates).
    public enum Signing {}

    /// Length of an uncompressed SEC1 point `04 ‖ X ‖ Y`.
    public static let x963ByteCount = 65
    /// Length of a private scalar.
    public static let scalarByteCount = 32
}
