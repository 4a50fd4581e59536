import COpenSSL

/// A failure of a cryptographic operation: a stable ``Code`` plus a sentence that is safe to log.
///
/// The description never contains key material, plaintext or a PAN; where OpenSSL reported a
/// reason, its library text (e.g. "bad decrypt") is appended, which carries no secret.
public struct CryptoError: Error, Sendable, CustomStringConvertible, Equatable {
    /// A stable, snake_case identifier of the failure, open for new values.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The snake_case text, stable across releases.
        public let rawValue: String
        /// Wraps a code text.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Key bytes, PEM or DER that do not describe a key of the expected type and size.
        public static let invalidKey = Code("invalid_key")
        /// A hex, base64 or base64url text that is not strictly valid.
        public static let invalidEncoding = Code("invalid_encoding")
        /// A value of the wrong size (key, IV, signature, payload field).
        public static let invalidLength = Code("invalid_length")
        /// An AEAD tag or RSA-OAEP padding check failed: the data was altered or the key is wrong.
        public static let authenticationFailed = Code("authentication_failed")
        /// A signature that is not a well-formed DER or raw ECDSA signature.
        public static let invalidSignatureEncoding = Code("invalid_signature_encoding")
        /// A pass payload or activation-data input that breaks Apple's or the network's format.
        public static let invalidInput = Code("invalid_input")
        /// The operation is switched off by configuration (RSA_V2 unless enabled).
        public static let disabled = Code("disabled")
        /// A sealed value names a key version the key ring does not hold.
        public static let unknownKeyVersion = Code("unknown_key_version")
        /// The master key setting is missing or malformed.
        public static let invalidMasterKey = Code("invalid_master_key")
        /// OpenSSL failed where it should not (allocation, provider missing).
        public static let libraryFailure = Code("library_failure")
    }

    /// What failed.
    public let code: Code
    /// A sentence safe to show to an operator.
    public let reason: String
    /// Where the error was raised.
    public let file: String
    /// The line where the error was raised.
    public let line: Int

    /// Creates an error and drains OpenSSL's per-thread error queue into ``reason``, so that a
    /// stale entry can never surface in a later, unrelated failure.
    ///
    /// - Parameters:
    ///   - code: What failed.
    ///   - reason: A sentence without secrets.
    init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        let library = OpenSSLErrorQueue.drain()
        self.code = code
        self.reason = library.isEmpty ? reason : "\(reason) (\(library))"
        self.file = file
        self.line = line
    }

    public var description: String { "\(code): \(reason)" }

    public static func == (lhs: CryptoError, rhs: CryptoError) -> Bool {
        lhs.code == rhs.code && lhs.reason == rhs.reason
    }
}

/// OpenSSL's thread-local error queue.
enum OpenSSLErrorQueue {
    /// Removes every queued error and returns their reason strings joined by "; ".
    static func drain() -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if reasons.count < 4, let text = ERR_reason_error_string(code) {
                reasons.append(String(cString: text))
            }
        }
        return reasons.joined(separator: "; ")
    }
}
