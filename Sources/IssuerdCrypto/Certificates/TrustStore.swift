import COpenSSL
import Foundation

/// An `X509_STORE` holding exactly one trusted root, and the `X509_verify_cert` call around it.
final class TrustStore: @unchecked Sendable {  // the store is filled once in init; OpenSSL locks its own lookups
    private let store: OpaquePointer
    private let root: X509Handle

    init(root: X509Handle) throws {
        guard let store = X509_STORE_new() else { throw CryptoError(.libraryFailure, "X509_STORE_new failed") }
        // X509_STORE_add_cert takes its own reference to the root.
        guard X509_STORE_add_cert(store, root.pointer) == 1 else {
            X509_STORE_free(store)
            throw CryptoError(.libraryFailure, "could not add the trust root")
        }
        self.store = store
        self.root = root
    }

    deinit { X509_STORE_free(store) }

    /// A verification failure with the depth at which OpenSSL reported it.
    struct Failure: Error {
        let code: ChainFailure.Code
        let detail: String
        let depth: Int

        /// Maps the depth (0 = leaf) to the caller's index when the chain is the expected 3-long one.
        func attributing(to leafIndex: Int, others: [Int]) -> ChainFailure {
            let index: Int? = depth == 0 ? leafIndex : (depth == 1 && others.count == 1 ? others[0] : nil)
            return ChainFailure(code, detail, certificateIndex: index)
        }
    }

    /// Builds and verifies leaf → … → root.
    ///
    /// - Parameter time: The time to check validity at, or `nil` to skip validity checks.
    /// - Returns: The built chain, leaf first, root last.
    func verify(leaf: X509Handle, untrusted: [X509Handle], at time: Date?) -> Result<[X509Handle], Failure> {
        guard let context = X509_STORE_CTX_new() else {
            return .failure(Failure(code: .verificationFailed, detail: "X509_STORE_CTX_new failed", depth: -1))
        }
        defer { X509_STORE_CTX_free(context) }
        guard let stack = OPENSSL_sk_new_null() else {
            return .failure(Failure(code: .verificationFailed, detail: "OPENSSL_sk_new_null failed", depth: -1))
        }
        // OPENSSL_sk_free frees the stack only; the handles keep owning their certificates.
        defer { OPENSSL_sk_free(stack) }
        for certificate in untrusted { OPENSSL_sk_push(stack, UnsafeRawPointer(certificate.pointer)) }
        guard X509_STORE_CTX_init(context, store, leaf.pointer, stack) == 1 else {
            _ = OpenSSLErrorQueue.drain()
            return .failure(Failure(code: .verificationFailed, detail: "X509_STORE_CTX_init failed", depth: -1))
        }
        let parameters = X509_STORE_CTX_get0_param(context)
        if let time {
            X509_VERIFY_PARAM_set_time(parameters, time_t(time.timeIntervalSince1970.rounded(.down)))
        } else {
            X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_NO_CHECK_TIME))
        }
        X509_STORE_CTX_set_verify_cb(context, appleVerifyCallback)
        let status = X509_verify_cert(context)
        guard status == 1 else {
            let error = X509_STORE_CTX_get_error(context)
            let depth = Int(X509_STORE_CTX_get_error_depth(context))
            _ = OpenSSLErrorQueue.drain()
            return .failure(Self.failure(error: error, depth: depth))
        }
        let chain = X509_STORE_CTX_get0_chain(context)
        var built: [X509Handle] = [leaf]
        let count = OPENSSL_sk_num(chain)
        for position in 1..<max(1, count) {
            guard let raw = OPENSSL_sk_value(chain, position) else { break }
            let pointer = OpaquePointer(raw)
            if pointer == root.pointer {
                built.append(root)
            } else if let match = untrusted.first(where: { $0.pointer == pointer }) {
                built.append(match)
            }
        }
        return .success(built)
    }

    private static func failure(error: Int32, depth: Int) -> Failure {
        let reason = String(cString: X509_verify_cert_error_string(Int(error)))
        let position = depth == 0 ? "leaf" : depth == 1 ? "intermediate" : "certificate at depth \(depth)"
        let code: ChainFailure.Code
        switch error {
        case X509_V_ERR_CERT_HAS_EXPIRED: code = .expired
        case X509_V_ERR_CERT_NOT_YET_VALID: code = .notYetValid
        case X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE,
            X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY:
            code = .signature
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            code = depth == 0 ? .missingIntermediate : .untrustedRoot
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_CERT_UNTRUSTED:
            code = .untrustedRoot
        case X509_V_ERR_INVALID_CA, X509_V_ERR_PATH_LENGTH_EXCEEDED, X509_V_ERR_INVALID_PURPOSE,
            X509_V_ERR_KEYUSAGE_NO_CERTSIGN:
            code = .invalidCA
        case X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION: code = .unhandledCriticalExtension
        default: code = .verificationFailed
        }
        return Failure(code: code, detail: "\(position): \(reason)", depth: depth)
    }
}

/// Accepts OpenSSL's "unhandled critical extension" only when every unhandled critical
/// extension of the current certificate is Apple's marker 1.2.840.113635.100.6.39; every other
/// error keeps OpenSSL's verdict. A global closure that captures nothing, as C callbacks must.
private let appleVerifyCallback: X509_STORE_CTX_verify_cb = { ok, context in
    if ok == 1 { return 1 }
    guard let context, X509_STORE_CTX_get_error(context) == X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION,
        let certificate = X509_STORE_CTX_get_current_cert(context)
    else { return 0 }
    let apple = Algorithms.shared.appleIssuerEncryptionOID
    let count = X509_get_ext_count(certificate)
    for position in 0..<count {
        guard let extensionPointer = X509_get_ext(certificate, position) else { return 0 }
        guard X509_EXTENSION_get_critical(extensionPointer) != 0, X509_supported_extension(extensionPointer) == 0 else {
            continue
        }
        if OBJ_cmp(X509_EXTENSION_get_object(extensionPointer), apple) != 0 { return 0 }
    }
    return 1
}
