import IssuerdCore

/// PANs at rest: AES-256-GCM under a versioned data key, a keyed fingerprint for lookups, and
/// HMAC digests for one-time codes (codes are never stored in clear).
///
/// Rotation (`issuerd keys rotate`): add a new master key version, then for each row call
/// ``reseal(_:context:)`` while the service keeps running; ``open(_:context:)`` accepts any
/// version still in the ring.
public struct PANVault: Sendable {
    /// The key ring.
    public let keyRing: MasterKeyRing

    /// Creates a vault over a key ring.
    public init(keyRing: MasterKeyRing) { self.keyRing = keyRing }

    /// Encrypts a PAN under the current key version with a fresh random IV.
    ///
    /// - Parameter context: Optional bytes bound to the ciphertext (e.g. the card id), so a
    ///   ciphertext copied to another row does not open; pass the same bytes to ``open(_:context:)``.
    public func seal(_ pan: PrimaryAccountNumber, context: [UInt8] = []) throws -> SealedPAN {
        let version = keyRing.currentVersion
        let key = try keyRing.dataKey(for: .panEncryption, version: version)
        let nonce = try SecureRandom.bytes(count: AES256GCM.nonceByteCount)
        var plaintext = Array(pan.unsafeDigits.utf8)
        defer { plaintext.withUnsafeMutableBytes { zeroize($0) } }
        let sealed = try AES256GCM.seal(
            plaintext, using: key, nonce: nonce, authenticating: Self.aad(version: version, context: context))
        return SealedPAN(keyVersion: version, bytes: nonce + sealed)
    }

    /// Decrypts a sealed PAN with the key version it names.
    ///
    /// - Throws: ``CryptoError/Code/unknownKeyVersion`` if that version left the ring;
    ///   ``CryptoError/Code/authenticationFailed`` if the bytes, version or context were altered.
    public func open(_ sealed: SealedPAN, context: [UInt8] = []) throws -> PrimaryAccountNumber {
        let key = try keyRing.dataKey(for: .panEncryption, version: sealed.keyVersion)
        guard sealed.bytes.count >= AES256GCM.nonceByteCount + AES256GCM.tagByteCount, sealed.bytes.count <= 128 else {
            throw CryptoError(.invalidLength, "sealed PAN of \(sealed.bytes.count) bytes")
        }
        let nonce = Array(sealed.bytes.prefix(AES256GCM.nonceByteCount))
        var plaintext = try AES256GCM.open(
            Array(sealed.bytes.dropFirst(AES256GCM.nonceByteCount)), using: key, nonce: nonce,
            authenticating: Self.aad(version: sealed.keyVersion, context: context))
        defer { plaintext.withUnsafeMutableBytes { zeroize($0) } }
        guard let pan = PrimaryAccountNumber(String(decoding: plaintext, as: UTF8.self)) else {
            throw CryptoError(.authenticationFailed, "sealed value is not a PAN")
        }
        return pan
    }

    /// True when `sealed` is under an older version than the current one.
    public func needsReseal(_ sealed: SealedPAN) -> Bool { sealed.keyVersion != keyRing.currentVersion }

    /// Opens with the old version and seals with the current one (`keys rotate`).
    public func reseal(_ sealed: SealedPAN, context: [UInt8] = []) throws -> SealedPAN {
        try seal(open(sealed, context: context), context: context)
    }

    /// HMAC-SHA256 of the PAN under the fingerprint key: the same PAN always gives the same
    /// 32 bytes while the fingerprint version stays, whatever data-key version sealed it.
    public func fingerprint(_ pan: PrimaryAccountNumber) throws -> [UInt8] {
        let key = try keyRing.dataKey(for: .panFingerprint, version: keyRing.fingerprintVersion)
        return HMACSHA256.authenticationCode(for: Array("pan:\(pan.unsafeDigits)".utf8), using: key)
    }

    /// HMAC-SHA256 of a one-time code's destination (a phone number's digits, an e-mail address
    /// in lower case) under the fingerprint key, in a domain of its own: the same destination of
    /// any customer gives the same 32 bytes, so its messages are counted together.
    public func destinationFingerprint(_ destination: String) throws -> [UInt8] {
        let key = try keyRing.dataKey(for: .panFingerprint, version: keyRing.fingerprintVersion)
        let normalized =
            destination.contains("@")
            ? destination.lowercased() : String(destination.filter { $0.isASCII && $0.isNumber })
        return HMACSHA256.authenticationCode(for: Array("destination:\(normalized)".utf8), using: key)
    }

    /// The digest to store for a one-time code, bound to its challenge.
    public func otpDigest(code: String, challengeId: String) throws -> [UInt8] {
        let key = try keyRing.dataKey(for: .otpDigest, version: keyRing.fingerprintVersion)
        var input = withUnsafeBytes(of: UInt32(challengeId.utf8.count).bigEndian) { Array($0) }
        input += Array(challengeId.utf8) + Array(code.utf8)
        return HMACSHA256.authenticationCode(for: input, using: key)
    }

    /// Checks a submitted code against a stored digest in constant time.
    public func otpMatches(code: String, challengeId: String, digest: [UInt8]) throws -> Bool {
        constantTimeEquals(try otpDigest(code: code, challengeId: challengeId), digest)
    }

    /// The key for ``IssuerOTPProvider`` activation data.
    public func activationOTPKey() throws -> SymmetricKey {
        try keyRing.dataKey(for: .activationOTP, version: keyRing.fingerprintVersion)
    }

    /// Binds the version and the caller's context to the ciphertext.
    private static func aad(version: Int, context: [UInt8]) -> [UInt8] {
        Array("issuerd-pan|v\(version)|".utf8) + context
    }
}

/// A PAN encrypted by ``PANVault``: store `keyVersion` and `bytes` (IV ‖ ciphertext ‖ tag).
public struct SealedPAN: Sendable, Equatable, Hashable {
    /// The master key version that sealed it.
    public let keyVersion: Int
    /// 12-byte IV, ciphertext, 16-byte tag.
    public let bytes: [UInt8]

    /// Rebuilds a sealed value read from storage.
    public init(keyVersion: Int, bytes: [UInt8]) {
        self.keyVersion = keyVersion
        self.bytes = bytes
    }
}
