/// The issuer side of PassKit's `EV_ECC_v2` scheme (provisioning spec section 2):
///
/// 1. a fresh P-256 ephemeral key per call (a random scalar from OpenSSL's private generator);
/// 2. Z = ECDH(ephemeral, leaf key), the 32-byte x-coordinate;
/// 3. K = SHA-256(00000001 ‖ Z ‖ 0D ‖ "id-aes256-GCM" ‖ "Apple" ‖ ephemeralPublicKey);
/// 4. `encryptedPassData` = AES-256-GCM(K, IV = 12 zero bytes, no AAD), tag appended.
///
/// A zero IV is safe only because K is unique per ephemeral key: that is why the ephemeral key
/// can be fixed only through the test SPI, never through the public API.
public struct ECCV2Encryptor: Sendable {
    /// Apple's AlgorithmID with its 1-byte length prefix.
    static let algorithmID: [UInt8] = [0x0D] + Array("id-aes256-GCM".utf8)
    /// Apple's PartyUInfo, without a length prefix.
    static let partyUInfo: [UInt8] = Array("Apple".utf8)
    /// The GCM IV: 12 zero bytes.
    static let zeroNonce = [UInt8](repeating: 0, count: AES256GCM.nonceByteCount)

    private let fixedEphemeralKey: P256.KeyAgreement.PrivateKey?

    /// An encryptor that generates a fresh ephemeral key for every seal.
    public init() { fixedEphemeralKey = nil }

    /// An encryptor that always uses `fixedEphemeralKey`, to reproduce known-answer vectors.
    /// Only reachable with `@_spi(Testing) import IssuerdCrypto`.
    @_spi(Testing) public init(fixedEphemeralKey: P256.KeyAgreement.PrivateKey) {
        self.fixedEphemeralKey = fixedEphemeralKey
    }

    /// The KDF's OtherInfo for an ephemeral public key.
    public static func otherInfo(ephemeralPublicKey: [UInt8]) -> [UInt8] {
        algorithmID + partyUInfo + ephemeralPublicKey
    }

    /// Seals a pass payload to a verified chain.
    ///
    /// - Throws: ``CryptoError/Code/invalidKey`` when the chain's key is not P-256 (verify with
    ///   scheme `.eccV2` to rule this out), or a library failure.
    public func seal(_ payload: PassPayload, to chain: ValidatedAppleChain) throws -> ECCV2Output {
        guard case .p256(let recipient) = chain.recipientKey else {
            throw CryptoError(.invalidKey, "ECC_V2 needs a P-256 leaf key")
        }
        var plaintext = payload.jsonBytes()
        defer { plaintext.withUnsafeMutableBytes { zeroize($0) } }
        return try seal(plaintext: plaintext, to: recipient)
    }

    /// Seals arbitrary bytes to a P-256 key (known-answer vectors; the API seals payloads).
    @_spi(Testing) public func seal(plaintext: [UInt8], to recipient: P256.KeyAgreement.PublicKey) throws -> ECCV2Output
    {
        // The ephemeral key as a scalar: its public point is scalar·G, and Z is scalar·recipient,
        // through the recipient's table once it has one (``P256PeerMultiples``).
        let context = try BNContext()
        let ephemeral = try fixedEphemeralKey.map { try ECScalar(of: $0.handle) } ?? ECScalar.random()
        let ephemeralPublicKey = try P256Group.x963(ofGeneratorTimes: ephemeral, context: context)
        let secret = try recipient.multiples.sharedSecret(ephemeral, context: context)
        let key = try ConcatenationKDF.deriveKey(
            from: secret, otherInfo: Self.otherInfo(ephemeralPublicKey: ephemeralPublicKey))
        let sealed = try AES256GCM.seal(plaintext, using: key, nonce: Self.zeroNonce)
        return ECCV2Output(encryptedPassData: sealed, ephemeralPublicKey: ephemeralPublicKey)
    }
}

/// What ECC_V2 returns to the app.
public struct ECCV2Output: Sendable, Equatable {
    /// `ciphertext ‖ tag`.
    public let encryptedPassData: [UInt8]
    /// The 65-byte uncompressed ephemeral point.
    public let ephemeralPublicKey: [UInt8]
}
