import IssuerdCrypto

/// Encrypts what a step-up message must not hold in clear in the outbox (the code and the
/// destination) and opens it again in the dispatcher, right before the provider call.
///
/// The key is derived with HKDF-SHA256 from the master key ring's `otp-digest` data key of the
/// current version, with its own `info` label (`issuerd/outbox-secret/v<N>`), so it is
/// independent of the digest key while needing no new purpose in the ring. AES-256-GCM with a
/// random 12-byte nonce; the associated data binds the key version and the outbox dedup key,
/// so a sealed value copied into another message does not open.
package struct OutboxSealer: Sendable {
    package let keyRing: MasterKeyRing

    /// Creates the value from every stored property.
    package init(keyRing: MasterKeyRing) {
        self.keyRing = keyRing
    }

    /// A sealed value: the master key version and `nonce ‖ ciphertext ‖ tag`.
    package struct Sealed: Sendable, Equatable {
        package var keyVersion: Int
        package var bytes: [UInt8]

        /// A sealed value as stored (a message re-sent under another key opens it first).
        package init(keyVersion: Int, bytes: [UInt8]) {
            self.keyVersion = keyVersion
            self.bytes = bytes
        }
    }

    /// Seals `plaintext` for the message with `dedupKey`.
    package func seal(_ plaintext: [UInt8], dedupKey: String) throws -> Sealed {
        let version = keyRing.currentVersion
        let nonce = try SecureRandom.bytes(count: AES256GCM.nonceByteCount)
        let ciphertext = try AES256GCM.seal(
            plaintext, using: try key(version: version), nonce: nonce, authenticating: Self.aad(version, dedupKey))
        return Sealed(keyVersion: version, bytes: nonce + ciphertext)
    }

    /// Opens a value sealed by ``seal(_:dedupKey:)``.
    ///
    /// - Throws: ``CryptoError`` when the version left the ring or the bytes were altered,
    ///   ``OutboxError`` for a value of impossible length.
    package func open(_ sealed: Sealed, dedupKey: String) throws -> [UInt8] {
        guard sealed.bytes.count >= AES256GCM.nonceByteCount + AES256GCM.tagByteCount, sealed.bytes.count <= 4096 else {
            throw OutboxError(.unreadablePayload, "sealed outbox value of \(sealed.bytes.count) bytes")
        }
        return try AES256GCM.open(
            Array(sealed.bytes.dropFirst(AES256GCM.nonceByteCount)), using: try key(version: sealed.keyVersion),
            nonce: Array(sealed.bytes.prefix(AES256GCM.nonceByteCount)),
            authenticating: Self.aad(sealed.keyVersion, dedupKey))
    }

    private func key(version: Int) throws -> SymmetricKey {
        try HKDF.deriveKey(
            inputKey: try keyRing.dataKey(for: .otpDigest, version: version), salt: Array("issuerd outbox".utf8),
            info: Array("issuerd/outbox-secret/v\(version)".utf8))
    }

    private static func aad(_ version: Int, _ dedupKey: String) -> [UInt8] {
        Array("issuerd-outbox|v\(version)|\(dedupKey)".utf8)
    }
}
