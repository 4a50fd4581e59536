import COpenSSL

/// HKDF-SHA256 (RFC 5869) through OpenSSL's `EVP_KDF`, used to derive purpose-separated data
/// keys from the master key.
public enum HKDF {
    /// Derives `outputByteCount` bytes from `inputKey`.
    ///
    /// - Parameters:
    ///   - inputKey: The input keying material (a master key version).
    ///   - salt: A non-secret salt (RFC 5869 §3.1).
    ///   - info: The purpose label that separates keys derived from the same input.
    ///   - outputByteCount: 1 to 255 × 32 bytes.
    /// - Throws: ``CryptoError`` on an out-of-range length or a library failure.
    public static func deriveKey(
        inputKey: SymmetricKey, salt: [UInt8], info: [UInt8], outputByteCount: Int = 32
    ) throws -> SymmetricKey {
        guard (1...(255 * 32)).contains(outputByteCount) else {
            throw CryptoError(.invalidLength, "HKDF output of \(outputByteCount) bytes")
        }
        guard let context = EVP_KDF_CTX_new(Algorithms.shared.hkdf) else {
            throw CryptoError(.libraryFailure, "EVP_KDF_CTX_new failed")
        }
        defer { EVP_KDF_CTX_free(context) }
        var digestName = Array("SHA256".utf8CString)
        var saltCopy = salt
        var infoCopy = info
        let secure = try inputKey.withUnsafeBytes { ikm in
            try SecureBytes(count: outputByteCount) { out in
                // Every value buffer stays alive until EVP_KDF_derive has returned.
                try digestName.withUnsafeMutableBufferPointer { digest in
                    try saltCopy.withUnsafeMutableBytes { saltBytes in
                        try infoCopy.withUnsafeMutableBytes { infoBytes in
                            var params = [
                                OSSL_PARAM_construct_utf8_string(ParamName.digest.pointer, digest.baseAddress, 0),
                                OSSL_PARAM_construct_octet_string(
                                    ParamName.key.pointer, UnsafeMutableRawPointer(mutating: ikm.baseAddress), ikm.count
                                ),
                                OSSL_PARAM_construct_octet_string(
                                    ParamName.salt.pointer, saltBytes.baseAddress, saltBytes.count),
                                OSSL_PARAM_construct_octet_string(
                                    ParamName.info.pointer, infoBytes.baseAddress, infoBytes.count),
                                OSSL_PARAM_construct_end(),
                            ]
                            let status = params.withUnsafeMutableBufferPointer {
                                EVP_KDF_derive(
                                    context, out.baseAddress?.assumingMemoryBound(to: UInt8.self), outputByteCount,
                                    $0.baseAddress)
                            }
                            guard status == 1 else { throw CryptoError(.libraryFailure, "HKDF derivation failed") }
                        }
                    }
                }
            }
        }
        return SymmetricKey(secure: secure)
    }
}
