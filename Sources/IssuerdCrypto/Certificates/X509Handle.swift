import COpenSSL
import Foundation

/// Owns one parsed `X509` and the DER it came from.
final class X509Handle: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; OpenSSL guards its lazy extension cache with its own lock
    /// The largest certificate accepted (Apple's are about 1 KiB).
    static let maximumDERLength = 16 * 1024

    let pointer: OpaquePointer
    let der: [UInt8]

    /// Parses strict DER: the whole buffer must be exactly one certificate.
    init?(der: [UInt8]) {
        guard !der.isEmpty, der.count <= Self.maximumDERLength, der[0] == 0x30 else { return nil }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let x509 = d2i_X509(nil, &cursor, buffer.count) else { return nil }
            guard cursor == buffer.baseAddress! + buffer.count else {
                X509_free(x509)
                return nil
            }
            return x509
        }
        guard let parsed else {
            _ = OpenSSLErrorQueue.drain()
            return nil
        }
        pointer = parsed
        self.der = der
    }

    /// Wraps a certificate this module built (development PKI).
    init(taking pointer: OpaquePointer) throws {
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(pointer, &out)
        guard length > 0, let out else {
            X509_free(pointer)
            throw CryptoError(.libraryFailure, "could not encode the certificate")
        }
        defer { CRYPTO_free(out, #fileID, #line) }
        self.pointer = pointer
        der = Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    deinit { X509_free(pointer) }

    /// SHA-256 of the DER.
    var fingerprint: [UInt8] { SHA256.hash(der) }

    /// True when the certificate carries `oid` as an extension.
    func hasExtension(_ oid: OpaquePointer) -> Bool { X509_get_ext_by_OBJ(pointer, oid, -1) >= 0 }

    /// The subject's first common name.
    var subjectCommonName: String? { Self.commonName(X509_get_subject_name(pointer)) }

    /// The one-line subject, for messages.
    var subjectLine: String { Self.oneLine(X509_get_subject_name(pointer)) }

    /// True when the certificate names itself as issuer (a root, or a forged one).
    var isSelfIssued: Bool { X509_check_issued(pointer, pointer) == X509_V_OK }

    var notBefore: Date? { Self.date(X509_get0_notBefore(pointer)) }
    var notAfter: Date? { Self.date(X509_get0_notAfter(pointer)) }

    /// Key usage bits, or `nil` when the certificate has no Key Usage extension.
    var keyUsage: UInt32? {
        let flags = X509_get_extension_flags(pointer)
        guard flags & UInt32(EXFLAG_KUSAGE) != 0 else { return nil }
        return X509_get_key_usage(pointer)
    }

    /// The subject public key (a new reference).
    func publicKey() throws -> PKeyHandle {
        guard let key = X509_get0_pubkey(pointer) else {
            throw CryptoError(.invalidKey, "certificate key cannot be decoded")
        }
        return try PKeyHandle(retaining: key)
    }

    // MARK: - Helpers

    static func commonName(_ name: OpaquePointer?) -> String? {
        guard let name else { return nil }
        var buffer = [CChar](repeating: 0, count: 256)
        let length = X509_NAME_get_text_by_NID(name, NID_commonName, &buffer, Int32(buffer.count))
        guard length >= 0 else {
            _ = OpenSSLErrorQueue.drain()
            return nil
        }
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func oneLine(_ name: OpaquePointer?) -> String {
        guard let name else { return "" }
        var buffer = [CChar](repeating: 0, count: 512)
        guard X509_NAME_oneline(name, &buffer, Int32(buffer.count)) != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}
