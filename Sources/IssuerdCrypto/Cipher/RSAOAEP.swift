/// RSAES-OAEP (RFC 8017 §7.1) with SHA-256 and MGF1-SHA-256, the padding Apple documents for
/// the merchant `RSA_v1` key wrap and the one RSA_V2 is assumed to use.
public enum RSAOAEP {
    /// Wraps a symmetric key to `publicKey`.
    ///
    /// - Returns: The ciphertext, as long as the modulus.
    /// - Throws: ``CryptoError/Code/invalidLength`` if the key does not fit the modulus.
    public static func wrap(_ key: SymmetricKey, to publicKey: RSA.Encryption.PublicKey) throws -> [UInt8] {
        try RSAKeyWrap.wrap(key, to: publicKey, padding: .oaepSHA256)
    }

    /// Unwraps a key wrapped by ``wrap(_:to:)``.
    ///
    /// - Throws: ``CryptoError/Code/authenticationFailed`` when the padding check fails (wrong
    ///   key or altered ciphertext); ``CryptoError/Code/invalidLength`` for a wrong size.
    public static func unwrap(_ wrapped: [UInt8], with privateKey: RSA.Encryption.PrivateKey) throws -> SymmetricKey {
        try RSAKeyWrap.unwrap(wrapped, with: privateKey, padding: .oaepSHA256)
    }
}
