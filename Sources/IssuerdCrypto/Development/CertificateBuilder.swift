import COpenSSL
import Foundation

/// Issues X.509 v3 certificates for the development PKI (never used on the provisioning path).
enum CertificateBuilder {
    /// One extension: a standard one as OpenSSL config text, or a raw OID with a DER value.
    enum Extension {
        case standard(nid: Int32, value: String)
        case raw(oid: OpaquePointer, critical: Bool, derValue: [UInt8])
    }

    /// The signer of a certificate: its certificate (nil for self-signed) and private key.
    struct Issuer {
        let certificate: X509Handle?
        let key: PKeyHandle
    }

    static func issue(
        subject: [(field: String, value: String)], publicKey: PKeyHandle, issuer: Issuer, notBefore: Date,
        notAfter: Date,
        extensions: [Extension]
    ) throws -> X509Handle {
        guard let x509 = X509_new() else { throw CryptoError(.libraryFailure, "X509_new failed") }
        var owned = true
        defer { if owned { X509_free(x509) } }
        let serial = try SecureRandom.bytes(count: 8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } & 0x7fff_ffff_ffff_ffff
        guard X509_set_version(x509, 2) == 1, ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), max(serial, 1)) == 1,
            ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notBefore.timeIntervalSince1970)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notAfter.timeIntervalSince1970)) != nil,
            X509_set_pubkey(x509, publicKey.pointer) == 1
        else { throw CryptoError(.libraryFailure, "could not fill the certificate") }
        let name = X509_get_subject_name(x509)
        for (field, value) in subject {
            let bytes = Array(value.utf8)
            guard X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1 else {
                throw CryptoError(.libraryFailure, "could not add \(field) to the subject")
            }
        }
        let issuerCertificate = issuer.certificate?.pointer ?? x509
        guard X509_set_issuer_name(x509, X509_get_subject_name(issuerCertificate)) == 1 else {
            throw CryptoError(.libraryFailure, "could not set the issuer name")
        }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuerCertificate, x509, nil, nil, 0)
        for item in extensions {
            let ext: OpaquePointer?
            switch item {
            case .standard(let nid, let value):
                ext = X509V3_EXT_nconf_nid(nil, &context, nid, value)
            case .raw(let oid, let critical, let derValue):
                guard let data = ASN1_OCTET_STRING_new() else {
                    throw CryptoError(.libraryFailure, "ASN1_OCTET_STRING_new failed")
                }
                defer { ASN1_OCTET_STRING_free(data) }
                guard ASN1_OCTET_STRING_set(data, derValue, Int32(derValue.count)) == 1 else {
                    throw CryptoError(.libraryFailure, "extension value")
                }
                ext = X509_EXTENSION_create_by_OBJ(nil, oid, critical ? 1 : 0, data)
            }
            guard let ext else { throw CryptoError(.libraryFailure, "could not build an extension") }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x509, ext, -1) == 1 else {
                throw CryptoError(.libraryFailure, "could not add an extension")
            }
        }
        guard X509_sign(x509, issuer.key.pointer, Algorithms.shared.sha256) > 0 else {
            throw CryptoError(.libraryFailure, "could not sign the certificate")
        }
        owned = false
        return try X509Handle(taking: x509)
    }

    /// PEM text of a certificate.
    static func pem(_ certificate: X509Handle) -> String {
        (try? KeyCoding.writeToMemoryBIO { PEM_write_bio_X509($0, certificate.pointer) == 1 }) ?? ""
    }
}
