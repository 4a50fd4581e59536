import COpenSSL

/// Owns one `EVP_PKEY` reference and frees it on release.
final class PKeyHandle: @unchecked Sendable {
    // @unchecked Sendable: never mutated after init; OpenSSL allows concurrent use of a const EVP_PKEY
    let pointer: OpaquePointer

    /// Takes ownership of a `+1` reference.
    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    /// Adds a reference to a borrowed key (e.g. `X509_get0_pubkey`).
    init(retaining pointer: OpaquePointer) throws {
        guard EVP_PKEY_up_ref(pointer) == 1 else { throw CryptoError(.libraryFailure, "EVP_PKEY_up_ref failed") }
        self.pointer = pointer
    }

    deinit { EVP_PKEY_free(pointer) }

    /// `EVP_PKEY_EC`, `EVP_PKEY_RSA`, …
    var baseID: Int32 { EVP_PKEY_get_base_id(pointer) }

    /// The key size in bits.
    var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// The curve name of an EC key (`prime256v1`), `nil` for other types.
    var groupName: String? {
        guard baseID == EVP_PKEY_EC else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        let status = buffer.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_utf8_string_param(pointer, ParamName.group.pointer, $0.baseAddress, $0.count, &length)
        }
        guard status == 1 else {
            _ = OpenSSLErrorQueue.drain()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True for an EC key on P-256.
    var isP256: Bool { groupName == "prime256v1" }

    /// A new operation context for this key.
    func makeContext() throws -> PKeyContext {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else {
            throw CryptoError(.libraryFailure, "EVP_PKEY_CTX_new_from_pkey failed")
        }
        return PKeyContext(context)
    }
}

/// Owns one `EVP_PKEY_CTX` for the duration of one operation.
final class PKeyContext {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_CTX_free(pointer) }
}

/// `OSSL_PARAM` key names. OpenSSL keeps the *pointer* to the name, so they must be static
/// strings (a Swift `String` argument would dangle once the call returns).
struct ParamName {
    let name: StaticString
    var pointer: UnsafePointer<CChar> { UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self) }

    static let group = ParamName(name: "group")
    static let publicKey = ParamName(name: "pub")
    static let privateKey = ParamName(name: "priv")
    static let encodedPublicKey = ParamName(name: "encoded-pub-key")
    static let digest = ParamName(name: "digest")
    static let key = ParamName(name: "key")
    static let salt = ParamName(name: "salt")
    static let info = ParamName(name: "info")
    static let rsaModulus = ParamName(name: "n")
    static let rsaExponent = ParamName(name: "e")
}
