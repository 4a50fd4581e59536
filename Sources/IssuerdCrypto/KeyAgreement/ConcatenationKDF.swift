import COpenSSL

/// NIST SP 800-56A rev. 3 §5.8.2.1 one-step key derivation ("concatenation KDF") with SHA-256,
/// as Apple's ECC_V2 uses it: `K(i) = SHA256(counter_i ‖ Z ‖ OtherInfo)`, 32-bit big-endian
/// counter from 1, output truncated to the requested length.
///
/// A one-round derivation costs about 0.3 µs; OpenSSL's `SSKDF` gives the same bytes (used as a
/// cross-check in the tests through the Python oracle).
public enum ConcatenationKDF {
    /// Derives `outputByteCount` bytes from an ECDH shared secret.
    ///
    /// - Parameters:
    ///   - secret: Z, the ECDH shared secret.
    ///   - otherInfo: The fixed-info string (for ECC_V2 see ``ECCV2Encryptor/otherInfo(ephemeralPublicKey:)``).
    ///   - outputByteCount: 1 to 1024 bytes; 32 for AES-256.
    /// - Throws: ``CryptoError/Code/invalidLength`` for an output length out of range.
    public static func deriveKey(
        from secret: SharedSecret, otherInfo: [UInt8], outputByteCount: Int = 32
    ) throws -> SymmetricKey {
        try secret.bytes.withUnsafeBytes { z in
            try deriveKey(z: z, otherInfo: otherInfo, outputByteCount: outputByteCount)
        }
    }

    static func deriveKey(z: UnsafeRawBufferPointer, otherInfo: [UInt8], outputByteCount: Int) throws -> SymmetricKey {
        guard (1...1024).contains(outputByteCount) else {
            throw CryptoError(.invalidLength, "KDF output of \(outputByteCount) bytes")
        }
        let rounds = (outputByteCount + SHA256.byteCount - 1) / SHA256.byteCount
        let secure = SecureBytes(count: outputByteCount) { out in
            var written = 0
            for round in 1...rounds {
                let counter = withUnsafeBytes(of: UInt32(round).bigEndian) { Array($0) }
                var block = counter.withUnsafeBytes { c in
                    otherInfo.withUnsafeBytes { o in SHA256.hash(parts: [c, z, o]) }
                }
                let take = min(block.count, outputByteCount - written)
                out.baseAddress!.advanced(by: written).copyMemory(from: block, byteCount: take)
                written += take
                block.withUnsafeMutableBytes { zeroize($0) }
            }
        }
        return SymmetricKey(secure: secure)
    }
}

/// Overwrites a buffer that held secret material.
func zeroize(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    OPENSSL_cleanse(base, buffer.count)
}
