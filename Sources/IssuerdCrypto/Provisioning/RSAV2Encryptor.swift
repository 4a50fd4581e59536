/// PassKit's `EV_RSA_v2`, implemented as the **documented merchant analogue** because Apple
/// does not publish the issuer-side details: a random AES-256 key wrapped with RSA-OAEP
/// (SHA-256, MGF1-SHA-256) to the leaf's RSA key (`wrappedKey`), and the payload sealed with
/// AES-256-GCM under that key with a 12-byte zero IV, tag appended (`encryptedPassData`).
///
/// **Unverified against Apple.** Off unless the operator enables it
/// (`ISSUERD_ENABLE_RSA_V2`); see docs/crypto.md.
public struct RSAV2Encryptor: Sendable {
    /// Creates the encryptor.
    ///
    /// - Parameter enabled: The operator's setting; RSA_V2 is off by default.
    /// - Throws: ``CryptoError/Code/disabled`` when `enabled` is false.
    public init(enabled: Bool) throws {
        guard enabled else {
            throw CryptoError(
                .disabled, "RSA_V2 is disabled; set ISSUERD_ENABLE_RSA_V2=1 to use the unverified merchant analogue")
        }
    }

    /// Seals a pass payload to a verified chain with an RSA leaf.
    ///
    /// - Throws: ``CryptoError/Code/invalidKey`` for a non-RSA leaf (verify with `.rsaV2`).
    public func seal(_ payload: PassPayload, to chain: ValidatedAppleChain) throws -> RSAV2Output {
        guard case .rsa(let recipient) = chain.recipientKey else {
            throw CryptoError(.invalidKey, "RSA_V2 needs an RSA leaf key")
        }
        var plaintext = payload.jsonBytes()
        defer { plaintext.withUnsafeMutableBytes { zeroize($0) } }
        return try seal(plaintext: plaintext, to: recipient)
    }

    /// Seals arbitrary bytes to an RSA key (tests; the API seals payloads).
    @_spi(Testing) public func seal(plaintext: [UInt8], to recipient: RSA.Encryption.PublicKey) throws -> RSAV2Output {
        // A fresh key per message is what makes the zero IV safe.
        let key = try SymmetricKey.random(byteCount: 32)
        let wrapped = try RSAOAEP.wrap(key, to: recipient)
        let sealed = try AES256GCM.seal(plaintext, using: key, nonce: ECCV2Encryptor.zeroNonce)
        return RSAV2Output(encryptedPassData: sealed, wrappedKey: wrapped)
    }
}

/// What RSA_V2 returns to the app.
public struct RSAV2Output: Sendable, Equatable {
    /// `ciphertext ‖ tag`.
    public let encryptedPassData: [UInt8]
    /// The OAEP-wrapped AES key.
    public let wrappedKey: [UInt8]
}
