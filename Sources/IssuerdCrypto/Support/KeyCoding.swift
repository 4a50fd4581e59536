import COpenSSL

/// PEM and DER key import/export for keys that arrive from files or settings (not a hot path:
/// these go through OpenSSL's decoder framework).
enum KeyCoding {
    /// PEM texts above this size are not keys (bounds the input).
    static let maximumPEMLength = 64 * 1024

    static func privateKey(pem: String) throws -> PKeyHandle {
        try withMemoryBIO(pem) { bio in
            guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
                throw CryptoError(.invalidKey, "not a PEM private key")
            }
            return PKeyHandle(taking: key)
        }
    }

    static func publicKey(pem: String) throws -> PKeyHandle {
        try withMemoryBIO(pem) { bio in
            guard let key = PEM_read_bio_PUBKEY(bio, nil, nil, nil) else {
                throw CryptoError(.invalidKey, "not a PEM public key")
            }
            return PKeyHandle(taking: key)
        }
    }

    static func privateKey(der: [UInt8]) throws -> PKeyHandle {
        guard !der.isEmpty, der.count <= maximumPEMLength else {
            throw CryptoError(.invalidKey, "DER private key of \(der.count) bytes")
        }
        return try der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let key = d2i_AutoPrivateKey(nil, &cursor, buffer.count) else {
                throw CryptoError(.invalidKey, "not a DER private key")
            }
            guard cursor == buffer.baseAddress! + buffer.count else {
                EVP_PKEY_free(key)
                throw CryptoError(.invalidKey, "trailing bytes after the DER private key")
            }
            return PKeyHandle(taking: key)
        }
    }

    static func publicKey(der: [UInt8]) throws -> PKeyHandle {
        guard !der.isEmpty, der.count <= maximumPEMLength else {
            throw CryptoError(.invalidKey, "DER public key of \(der.count) bytes")
        }
        return try der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let key = d2i_PUBKEY(nil, &cursor, buffer.count) else {
                throw CryptoError(.invalidKey, "not a DER SubjectPublicKeyInfo")
            }
            guard cursor == buffer.baseAddress! + buffer.count else {
                EVP_PKEY_free(key)
                throw CryptoError(.invalidKey, "trailing bytes after the DER public key")
            }
            return PKeyHandle(taking: key)
        }
    }

    static func privateKeyPEM(_ handle: PKeyHandle) throws -> String {
        try writeToMemoryBIO { bio in PEM_write_bio_PrivateKey(bio, handle.pointer, nil, nil, 0, nil, nil) == 1 }
    }

    static func publicKeyPEM(_ handle: PKeyHandle) throws -> String {
        try writeToMemoryBIO { bio in PEM_write_bio_PUBKEY(bio, handle.pointer) == 1 }
    }

    static func publicKeyDER(_ handle: PKeyHandle) throws -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(handle.pointer, &out)
        guard length > 0, let out else { throw CryptoError(.invalidKey, "could not encode the public key") }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    static func requireP256(_ handle: PKeyHandle) throws {
        guard handle.isP256 else { throw CryptoError(.invalidKey, "expected a P-256 key") }
    }

    static func requireRSA(_ handle: PKeyHandle, minimumBits: Int = 2048) throws {
        guard handle.baseID == EVP_PKEY_RSA else { throw CryptoError(.invalidKey, "expected an RSA key") }
        guard handle.bits >= minimumBits else {
            throw CryptoError(.invalidKey, "RSA key of \(handle.bits) bits; at least \(minimumBits) required")
        }
    }

    // MARK: - BIO helpers

    static func withMemoryBIO<Result>(_ text: String, _ body: (OpaquePointer) throws -> Result) throws -> Result {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumPEMLength else {
            throw CryptoError(.invalidKey, "PEM text of \(bytes.count) bytes")
        }
        return try bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else {
                throw CryptoError(.libraryFailure, "BIO_new_mem_buf failed")
            }
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }

    static func writeToMemoryBIO(_ body: (OpaquePointer) -> Bool) throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError(.libraryFailure, "BIO_new failed") }
        defer { BIO_free(bio) }
        guard body(bio) else { throw CryptoError(.libraryFailure, "PEM encoding failed") }
        var data: UnsafeMutableRawPointer?
        // BIO_get_mem_data is a macro over BIO_ctrl(BIO_CTRL_INFO).
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data)
        guard length > 0, let data else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}
