import CRNP
import Foundation

/// Signs a message with the sender's OpenPGP secret key and encrypts it to the recipient's public
/// key in one OpenPGP message (RFC 4880: a one-pass signature and the literal data inside a
/// symmetrically encrypted, integrity-protected packet whose session key is wrapped to the
/// recipient), through RNP. No packet is written here: RNP writes them all.
///
/// Both keys are ASCII-armoured (or binary) transferable keys. RNP picks the signing-capable key
/// (the primary or a subkey) of the sender and the encryption-capable key of the recipient. A
/// passphrase-protected secret key is refused at start: issuerd has no passphrase to give it.
public struct OpenPGPSealer: Sendable {
    private let signingKey: [UInt8]
    private let recipientKey: [UInt8]
    /// The signing key's primary fingerprint, hex (for logs and docs).
    public let signingFingerprint: String
    /// The recipient's primary fingerprint, hex.
    public let recipientFingerprint: String

    /// Checks both keys by sealing a probe message once.
    ///
    /// - Parameters:
    ///   - signingKey: The sender's secret key, unprotected.
    ///   - recipientKey: The recipient's public key.
    /// - Throws: ``OpenPGPError`` naming the key that does not load or cannot serve.
    public init(signingKey: [UInt8], recipientKey: [UInt8]) throws {
        self.signingKey = signingKey
        self.recipientKey = recipientKey
        let session = try RNPSession(signingKey: signingKey, recipientKey: recipientKey)
        signingFingerprint = session.signingFingerprint
        recipientFingerprint = session.recipientFingerprint
        _ = try session.seal(Array("probe".utf8))
    }

    /// The signed and encrypted message, binary (Base64 it for transport).
    ///
    /// - Throws: ``OpenPGPError``.
    public func seal(_ plaintext: [UInt8]) throws -> [UInt8] {
        // An RNP context is not thread-safe; one per message (loading two keys costs well under a
        // millisecond beside the RSA operations).
        try RNPSession(signingKey: signingKey, recipientKey: recipientKey).seal(plaintext)
    }
}

/// One RNP context with the two keys loaded; freed in `deinit`.
private final class RNPSession {
    private var ffi: rnp_ffi_t?
    let signingFingerprint: String
    let recipientFingerprint: String

    init(signingKey: [UInt8], recipientKey: [UInt8]) throws {
        var handle: rnp_ffi_t?
        try Self.check(rnp_ffi_create(&handle, "GPG", "GPG"), "create context")
        do {
            signingFingerprint = try Self.importKey(signingKey, into: handle, secret: true, step: "load signing key")
            recipientFingerprint = try Self.importKey(
                recipientKey, into: handle, secret: false, step: "load recipient key")
        } catch {
            // deinit does not run for an object whose stored properties are not all set, so a
            // key that does not load would otherwise leave the context (and what it loaded) behind.
            rnp_ffi_destroy(handle)
            throw error
        }
        ffi = handle
        let key = try locate(signingFingerprint, step: "load signing key")
        defer { rnp_key_handle_destroy(key) }
        var flag = false
        try Self.check(rnp_key_have_secret(key, &flag), "load signing key")
        guard flag else { throw OpenPGPError(step: "load signing key", reason: "the file holds no secret key") }
        try Self.check(rnp_key_is_protected(key, &flag), "load signing key")
        guard !flag else {
            throw OpenPGPError(step: "load signing key", reason: "the secret key is passphrase-protected")
        }
    }

    deinit {
        if let ffi { rnp_ffi_destroy(ffi) }
    }

    func seal(_ plaintext: [UInt8]) throws -> [UInt8] {
        let step = "sign and encrypt"
        var input: rnp_input_t?
        try plaintext.withUnsafeBufferPointer { buffer in
            try Self.check(rnp_input_from_memory(&input, buffer.baseAddress, buffer.count, true), step)
        }
        defer { rnp_input_destroy(input) }
        var output: rnp_output_t?
        try Self.check(rnp_output_to_memory(&output, 0), step)
        defer { rnp_output_destroy(output) }
        var op: rnp_op_encrypt_t?
        try Self.check(rnp_op_encrypt_create(&op, ffi, input, output), step)
        defer { rnp_op_encrypt_destroy(op) }
        let signer = try locate(signingFingerprint, step: step)
        defer { rnp_key_handle_destroy(signer) }
        let recipient = try locate(recipientFingerprint, step: step)
        defer { rnp_key_handle_destroy(recipient) }
        try Self.check(rnp_op_encrypt_add_recipient(op, recipient), "\(step): recipient key")
        try Self.check(rnp_op_encrypt_add_signature(op, signer, nil), "\(step): signing key")
        try Self.check(rnp_op_encrypt_set_armor(op, false), step)
        try Self.check(rnp_op_encrypt_set_cipher(op, "AES256"), step)
        try Self.check(rnp_op_encrypt_set_hash(op, "SHA256"), step)
        try Self.check(rnp_op_encrypt_set_compression(op, "Uncompressed", 0), step)
        try Self.check(rnp_op_encrypt_execute(op), step)
        var bytes: UnsafeMutablePointer<UInt8>?
        var length = 0
        try Self.check(rnp_output_memory_get_buf(output, &bytes, &length, false), step)
        guard let bytes, length > 0 else { throw OpenPGPError(step: step, reason: "RNP wrote nothing") }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }

    private func locate(_ fingerprint: String, step: String) throws -> rnp_key_handle_t? {
        var key: rnp_key_handle_t?
        try Self.check(rnp_locate_key(ffi, "fingerprint", fingerprint, &key), step)
        guard key != nil else { throw OpenPGPError(step: step, reason: "key \(fingerprint) not found") }
        return key
    }

    /// Imports one transferable key; returns its primary key's fingerprint.
    private static func importKey(_ bytes: [UInt8], into ffi: rnp_ffi_t?, secret: Bool, step: String) throws -> String {
        guard !bytes.isEmpty, bytes.count <= 1 << 20 else {
            throw OpenPGPError(step: step, reason: "a key file is 1 byte to 1 MiB")
        }
        var input: rnp_input_t?
        try bytes.withUnsafeBufferPointer { buffer in
            try check(rnp_input_from_memory(&input, buffer.baseAddress, buffer.count, true), step)
        }
        defer { rnp_input_destroy(input) }
        let flags = UInt32(RNP_LOAD_SAVE_PUBLIC_KEYS) | (secret ? UInt32(RNP_LOAD_SAVE_SECRET_KEYS) : 0)
        var results: UnsafeMutablePointer<CChar>?
        try check(rnp_import_keys(ffi, input, flags, &results), step)
        defer { rnp_buffer_destroy(results) }
        guard let results else { throw OpenPGPError(step: step, reason: "no key imported") }
        let summary = try? JSONDecoder().decode(ImportResults.self, from: Data(String(cString: results).utf8))
        // The first key listed is the primary (subkeys follow it).
        guard let fingerprint = summary?.keys.first?.fingerprint else {
            throw OpenPGPError(step: step, reason: "the file holds no OpenPGP key")
        }
        return fingerprint
    }

    private struct ImportResults: Decodable {
        struct Key: Decodable { var fingerprint: String }
        var keys: [Key]
    }

    private static func check(_ result: rnp_result_t, _ step: String) throws {
        guard result != rnp_result_t(RNP_SUCCESS) else { return }
        throw OpenPGPError(step: step, reason: String(cString: rnp_result_to_string(result)))
    }
}
