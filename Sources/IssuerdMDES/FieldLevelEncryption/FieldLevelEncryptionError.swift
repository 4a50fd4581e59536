/// Why an `encryptedPayload` did not open, or could not be made.
///
/// Every case answers MDES the same way (``errorCode``, `CRYPTOGRAPHY_ERROR`, in an
/// `ErrorsResponse`): the peer learns that the payload did not open, never which step failed. The
/// ``description`` is for the log: it names the step and, where useful, the (public) key
/// fingerprint, and never carries the payload's bytes, the key or the plaintext.
public struct FieldLevelEncryptionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The step that failed.
    public enum Reason: Sendable, Equatable {
        /// A field is missing, of the wrong length, or not hex.
        case malformedField(String)
        /// `oaepHashingAlgorithm` names a hash other than SHA-256 or SHA-512.
        case unsupportedHashAlgorithm
        /// No configured key has this fingerprint (lowercase hex).
        case unknownKeyFingerprint(String)
        /// The RSA unwrap failed: wrong key, wrong padding, altered `encryptedKey`.
        case keyUnwrapFailed
        /// The unwrapped key is not 16 or 32 bytes long.
        case unexpectedKeyLength(Int)
        /// AES-CBC decryption failed (padding): wrong key or IV, altered `encryptedData`.
        case decryptionFailed
        /// The plaintext is not a UTF-8 JSON object.
        case plaintextNotJSONObject
        /// `dataValidUntilTimestamp` is not an ISO 8601 date-time of 20–29 characters.
        case malformedValidity
        /// `dataValidUntilTimestamp` has passed.
        case expired
        /// `dataValidUntilTimestamp` is more than 30 days ahead.
        case validityTooFarAhead
        /// Making a payload for Mastercard failed (key wrap, encryption).
        case encryptionFailed
    }

    /// The step that failed.
    public let reason: Reason

    /// Wraps a reason.
    public init(_ reason: Reason) { self.reason = reason }

    /// The `errorCode` MDES receives in the `ErrorsResponse`.
    public static let errorCode = "CRYPTOGRAPHY_ERROR"

    /// The `errorCode` of this failure (always ``errorCode``).
    public var errorCode: String { Self.errorCode }

    public var description: String {
        switch reason {
        case .malformedField(let field): "field-level encryption: \(field) is missing, malformed or of a wrong length"
        case .unsupportedHashAlgorithm: "field-level encryption: oaepHashingAlgorithm is neither SHA256 nor SHA512"
        case .unknownKeyFingerprint(let fingerprint):
            "field-level encryption: no issuer key has publicKeyFingerprint \(fingerprint)"
        case .keyUnwrapFailed: "field-level encryption: encryptedKey does not unwrap with the named key"
        case .unexpectedKeyLength(let count): "field-level encryption: unwrapped AES key of \(count) bytes"
        case .decryptionFailed: "field-level encryption: encryptedData does not decrypt (padding)"
        case .plaintextNotJSONObject: "field-level encryption: the plaintext is not a JSON object"
        case .malformedValidity: "field-level encryption: dataValidUntilTimestamp is not an ISO 8601 date-time"
        case .expired: "field-level encryption: dataValidUntilTimestamp has passed"
        case .validityTooFarAhead: "field-level encryption: dataValidUntilTimestamp is more than 30 days ahead"
        case .encryptionFailed: "field-level encryption: the payload for Mastercard could not be encrypted"
        }
    }
}
