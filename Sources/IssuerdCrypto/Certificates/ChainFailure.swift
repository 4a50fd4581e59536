/// Why an Apple certificate chain was rejected: the failed check as a stable snake_case
/// ``Code`` (it becomes the API's 422 `detail`) plus a sentence safe to show.
public struct ChainFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The failed check, open for new values.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The snake_case text.
        public let rawValue: String
        /// Wraps a code text.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No certificates, or more than the verifier accepts.
        public static let badCount = Code("certificate_count")
        /// An element is not one DER X.509 certificate (or not decodable text).
        public static let malformedDER = Code("malformed_der")
        /// No certificate carries the marker OID 1.2.840.113635.100.6.39.
        public static let leafNotFound = Code("leaf_not_found")
        /// More than one certificate carries the marker OID.
        public static let multipleLeaves = Code("multiple_leaves")
        /// The leaf's issuer was not sent (or the leaf hangs directly off the root).
        public static let missingIntermediate = Code("missing_intermediate")
        /// The chain does not end at the pinned root of the trust profile.
        public static let untrustedRoot = Code("untrusted_root")
        /// A certificate signature does not verify.
        public static let signature = Code("signature")
        /// A certificate's notAfter is before the verification time.
        public static let expired = Code("expired")
        /// A certificate's notBefore is after the verification time.
        public static let notYetValid = Code("not_yet_valid")
        /// An issuing certificate is not a CA (basic constraints, key usage, path length).
        public static let invalidCA = Code("invalid_ca")
        /// A critical extension other than Apple's marker is not understood.
        public static let unhandledCriticalExtension = Code("unhandled_critical_extension")
        /// The chain is not exactly leaf → intermediate → root.
        public static let chainLength = Code("chain_length")
        /// The intermediate's common name is not the one the profile requires.
        public static let intermediateName = Code("intermediate_name")
        /// The leaf lacks keyEncipherment (or keyAgreement for an EC key).
        public static let leafKeyUsage = Code("leaf_key_usage")
        /// The leaf key does not suit the scheme (P-256 for ECC_V2, RSA ≥ 2048 for RSA_V2).
        public static let leafKeyType = Code("leaf_key_type")
        /// Any other X.509 verification error; the detail names OpenSSL's reason.
        public static let verificationFailed = Code("verification_failed")
    }

    /// The failed check.
    public let code: Code
    /// A sentence naming the problem, without certificate contents beyond subject names.
    public let detail: String
    /// The index, in the caller's array, of the certificate at fault, when known.
    public let certificateIndex: Int?

    /// Creates a failure.
    public init(_ code: Code, _ detail: String, certificateIndex: Int? = nil) {
        self.code = code
        self.detail = detail
        self.certificateIndex = certificateIndex
    }

    public var description: String { "\(code): \(detail)" }
}
