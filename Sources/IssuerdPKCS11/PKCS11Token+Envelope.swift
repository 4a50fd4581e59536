import CPKCS11
import Foundation

/// Envelope encryption: AES-256 data keys wrapped (RFC 3394 AES key wrap, `CKM_AES_KEY_WRAP`)
/// by the non-extractable wrapping key that never leaves the token.
extension PKCS11Token {
    /// The byte length of a data key.
    public static let dataKeyByteCount = 32
    /// The byte length of a wrapped data key (RFC 3394 adds 8 bytes).
    public static let wrappedDataKeyByteCount = 40

    /// Generates a fresh AES-256 data key inside the token and returns it wrapped; the clear key
    /// exists only as a session object, destroyed before returning.
    ///
    /// - Throws: ``PKCS11Error`` naming the wrapping key or the Cryptoki failure.
    public func wrapNewDataKey(wrappingKeyLabel: String) throws -> [UInt8] {
        try checkWrappingKey(label: wrappingKeyLabel)
        return try withSession { session in
            let key = try session.generateKey(
                mechanism: CK_MECHANISM_TYPE(CKM_AES_KEY_GEN),
                [
                    .number(CKA_CLASS, CKO_SECRET_KEY), .number(CKA_KEY_TYPE, CKK_AES),
                    .number(CKA_VALUE_LEN, Self.dataKeyByteCount),
                    .flag(CKA_TOKEN, false), .flag(CKA_PRIVATE, true), .flag(CKA_SENSITIVE, true),
                    .flag(CKA_EXTRACTABLE, true),
                ])
            defer { session.destroy(key) }
            return try wrap(key, wrappingKeyLabel: wrappingKeyLabel, session: session)
        }
    }

    /// Wraps an existing 32-byte key (the environment master key being moved into the HSM).
    ///
    /// - Parameter key: The key bytes, lent for the call; only the token sees them.
    public func wrapDataKey(_ key: UnsafeRawBufferPointer, wrappingKeyLabel: String) throws -> [UInt8] {
        guard key.count == Self.dataKeyByteCount else {
            throw PKCS11Error(.invalidInput, "a data key must be \(Self.dataKeyByteCount) bytes")
        }
        try checkWrappingKey(label: wrappingKeyLabel)
        return try withSession { session in
            let object = try session.createObject([
                .number(CKA_CLASS, CKO_SECRET_KEY), .number(CKA_KEY_TYPE, CKK_AES),
                .secret(CK_ATTRIBUTE_TYPE(CKA_VALUE), key),
                .flag(CKA_TOKEN, false), .flag(CKA_PRIVATE, true), .flag(CKA_SENSITIVE, true),
                .flag(CKA_EXTRACTABLE, true),
            ])
            defer { session.destroy(object) }
            return try wrap(object, wrappingKeyLabel: wrappingKeyLabel, session: session)
        }
    }

    /// Unwraps a data key in the token and lends its 32 bytes to `body` from a page-locked
    /// buffer (`mlock`) that is wiped before this returns; the session object is destroyed.
    ///
    /// - Throws: ``PKCS11Error/Code/unwrapFailed`` when the bytes do not unwrap under the
    ///   wrapping key (altered, or wrapped by another key); other ``PKCS11Error``s.
    public func unwrapDataKey<R>(
        _ wrapped: [UInt8], wrappingKeyLabel: String, _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        guard wrapped.count == Self.wrappedDataKeyByteCount else {
            throw PKCS11Error(
                .invalidInput, "a wrapped data key must be \(Self.wrappedDataKeyByteCount) bytes, not \(wrapped.count)")
        }
        let buffer = LockedBuffer(count: Self.dataKeyByteCount)
        try withSession { session in
            let kek = try handle(label: wrappingKeyLabel, objectClass: UInt(CKO_SECRET_KEY), session: session)
            var mechanism = CK_MECHANISM(
                mechanism: CK_MECHANISM_TYPE(CKM_AES_KEY_WRAP), pParameter: nil, ulParameterLen: 0)
            var key: CK_OBJECT_HANDLE = 0
            // A session object the application may read once: sensitive false only for this
            // object, which lives in this session and is destroyed right after the read.
            let template: [PKCS11Attribute] = [
                .number(CKA_CLASS, CKO_SECRET_KEY), .number(CKA_KEY_TYPE, CKK_AES), .flag(CKA_TOKEN, false),
                .flag(CKA_PRIVATE, true),
                .flag(CKA_SENSITIVE, false), .flag(CKA_EXTRACTABLE, true),
            ]
            var input = wrapped
            try PKCS11Attribute.withTemplate(template) { attributes, count in
                let rv = session.functions.C_UnwrapKey!(
                    session.handle, &mechanism, kek, &input, CK_ULONG(input.count), attributes, count, &key)
                // The wrapping key was found and checked above, so a failure here is the RFC 3394
                // integrity check; modules report it differently (SoftHSM2: CKR_GENERAL_ERROR).
                if [CKR_GENERAL_ERROR, CKR_FUNCTION_FAILED, CKR_WRAPPED_KEY_INVALID, CKR_ENCRYPTED_DATA_INVALID]
                    .contains(rv)
                {
                    throw PKCS11Error(
                        .unwrapFailed,
                        "a wrapped data key does not unwrap under '\(wrappingKeyLabel)' (altered, or wrapped by another key)",
                        function: "C_UnwrapKey", returnValue: UInt(rv))
                }
                try session.check("C_UnwrapKey", rv)
            }
            defer { session.destroy(key) }
            var attribute = CK_ATTRIBUTE(
                type: CK_ATTRIBUTE_TYPE(CKA_VALUE), pValue: buffer.pointer, ulValueLen: CK_ULONG(buffer.count))
            try session.check(
                "C_GetAttributeValue", session.functions.C_GetAttributeValue!(session.handle, key, &attribute, 1))
            guard attribute.ulValueLen == CK_ULONG(Self.dataKeyByteCount) else {
                throw PKCS11Error(
                    .keyWrongType,
                    "an unwrapped data key is \(attribute.ulValueLen) bytes, not \(Self.dataKeyByteCount)")
            }
        }
        // The buffer wipes and frees its memory in deinit: keep it alive until `body` is done,
        // or Swift may release it right after its last use (building the pointer).
        return try withExtendedLifetime(buffer) {
            try body(UnsafeRawBufferPointer(start: buffer.pointer, count: buffer.count))
        }
    }

    private func wrap(_ key: CK_OBJECT_HANDLE, wrappingKeyLabel: String, session: PKCS11Session) throws -> [UInt8] {
        let kek = try handle(label: wrappingKeyLabel, objectClass: UInt(CKO_SECRET_KEY), session: session)
        var mechanism = CK_MECHANISM(mechanism: CK_MECHANISM_TYPE(CKM_AES_KEY_WRAP), pParameter: nil, ulParameterLen: 0)
        var wrapped = [UInt8](repeating: 0, count: 64)
        var length = CK_ULONG(wrapped.count)
        try session.check(
            "C_WrapKey", session.functions.C_WrapKey!(session.handle, &mechanism, kek, key, &wrapped, &length))
        guard Int(length) == Self.wrappedDataKeyByteCount else {
            throw PKCS11Error(
                .operationFailed, "C_WrapKey returned \(length) bytes, expected \(Self.wrappedDataKeyByteCount)")
        }
        return Array(wrapped.prefix(Int(length)))
    }
}

/// A page-aligned buffer locked into RAM (`mlock`, so it is never swapped) and wiped with
/// `explicit_bzero` before release. Locking can fail under a small `RLIMIT_MEMLOCK`; the
/// buffer is still wiped, and ``isLocked`` says so.
final class LockedBuffer {
    let pointer: UnsafeMutableRawPointer
    let count: Int
    let isLocked: Bool
    private let capacity: Int

    init(count: Int) {
        let page = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
        capacity = max((count + page - 1) / page * page, page)
        pointer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: page)
        pointer.initializeMemory(as: UInt8.self, repeating: 0, count: capacity)
        isLocked = mlock(pointer, capacity) == 0
        self.count = count
    }

    deinit {
        explicit_bzero(pointer, capacity)
        if isLocked { munlock(pointer, capacity) }
        pointer.deallocate()
    }
}
