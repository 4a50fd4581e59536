import COpenSSL

/// OpenSSL algorithm objects fetched once per process.
///
/// The implicit fetch inside `EVP_sha256()`/`EVP_aes_256_gcm()` costs about 30% of a small GCM
/// operation (platform notes), so every hot path uses these pre-fetched objects.
final class Algorithms: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; fetched EVP objects are read-only and thread-safe
    /// The process-wide instance.
    static let shared = Algorithms()

    let sha256: OpaquePointer
    /// SHA-1, only for certificate and key fingerprints (Mastercard's `publicKeyFingerprint`).
    let sha1: OpaquePointer
    /// SHA-512, the other hash Mastercard's RSA-OAEP key wrap may name.
    let sha512: OpaquePointer
    let aes256GCM: OpaquePointer
    /// AES-CBC (Mastercard field-level encryption), 128- and 256-bit keys.
    let aes128CBC: OpaquePointer
    let aes256CBC: OpaquePointer
    let hkdf: OpaquePointer
    /// The HMAC `EVP_MAC` (``HMACKeyedContext``).
    let hmac: OpaquePointer
    /// A parameters-only P-256 key: generating from it skips the group lookup and cuts a
    /// key generation from ~25 µs to ~15 µs.
    let p256Template: OpaquePointer
    /// 1.2.840.113635.100.6.39, the marker extension of Apple's Pay issuer-encryption leaf.
    let appleIssuerEncryptionOID: OpaquePointer
    /// 1.2.840.113635.100.6.2.15, the marker of the WWDR G2 intermediate (informational only).
    let appleWWDRMarkerOID: OpaquePointer

    private init() {
        guard let sha256 = EVP_MD_fetch(nil, "SHA256", nil),
            let sha1 = EVP_MD_fetch(nil, "SHA1", nil),
            let sha512 = EVP_MD_fetch(nil, "SHA512", nil),
            let aes = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil),
            let aes128CBC = EVP_CIPHER_fetch(nil, "AES-128-CBC", nil),
            let aes256CBC = EVP_CIPHER_fetch(nil, "AES-256-CBC", nil),
            let hkdf = EVP_KDF_fetch(nil, "HKDF", nil),
            let hmac = EVP_MAC_fetch(nil, "HMAC", nil),
            let appleOID = OBJ_txt2obj(AppleOID.issuerEncryption, 1),
            let wwdrOID = OBJ_txt2obj(AppleOID.wwdrG2Marker, 1)
        else {
            // Without the default provider nothing in this module can work: fail at start-up.
            preconditionFailure(
                "OpenSSL default provider is missing SHA1, SHA256, SHA512, AES-GCM, AES-CBC, HKDF or HMAC: \(OpenSSLErrorQueue.drain())"
            )
        }
        self.sha256 = sha256
        self.sha1 = sha1
        self.sha512 = sha512
        self.aes256GCM = aes
        self.aes128CBC = aes128CBC
        self.aes256CBC = aes256CBC
        self.hkdf = hkdf
        self.hmac = hmac
        self.appleIssuerEncryptionOID = appleOID
        self.appleWWDRMarkerOID = wwdrOID
        var template: OpaquePointer?
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            preconditionFailure("OpenSSL has no EC support")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_paramgen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_paramgen(context, &template) == 1, let template
        else { preconditionFailure("OpenSSL cannot create P-256 parameters: \(OpenSSLErrorQueue.drain())") }
        self.p256Template = template
    }
}

/// Apple's object identifiers used by the provisioning chain.
public enum AppleOID {
    /// Marker of the leaf used for Apple Pay issuer encryption (critical in Apple's leaves).
    public static let issuerEncryption = "1.2.840.113635.100.6.39"
    /// Marker of the "Apple Worldwide Developer Relations CA - G2" intermediate.
    public static let wwdrG2Marker = "1.2.840.113635.100.6.2.15"
}
