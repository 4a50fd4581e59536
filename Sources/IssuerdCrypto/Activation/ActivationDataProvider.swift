import Foundation
import IssuerdCore

/// What an activation-data provider may bind its one-time value to.
public struct ActivationDataRequest: Sendable, CustomStringConvertible {
    /// The card number (masked in every textual form).
    public let primaryAccountNumber: PrimaryAccountNumber
    /// The card's expiry.
    public let expiration: CardExpiration
    /// The issuer's stable card reference (card id or token reference).
    public let cardReference: String
    /// PassKit's nonce, or empty for In-App Verification (no nonce there).
    public let nonce: [UInt8]
    /// The current time, passed in so that validity is testable.
    public let now: Date

    /// The longest card reference accepted.
    public static let maximumCardReferenceLength = 128

    /// Creates a request.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for an empty or oversized card reference or nonce.
    public init(
        primaryAccountNumber: PrimaryAccountNumber, expiration: CardExpiration, cardReference: String, nonce: [UInt8],
        now: Date
    ) throws {
        guard (1...Self.maximumCardReferenceLength).contains(cardReference.utf8.count) else {
            throw CryptoError(.invalidInput, "card reference must be 1 to \(Self.maximumCardReferenceLength) bytes")
        }
        guard nonce.count <= 64 else { throw CryptoError(.invalidInput, "nonce of \(nonce.count) bytes") }
        self.primaryAccountNumber = primaryAccountNumber
        self.expiration = expiration
        self.cardReference = cardReference
        self.nonce = nonce
        self.now = now
    }

    public var description: String { "ActivationDataRequest(\(primaryAccountNumber.masked), \(cardReference))" }
}

/// Produces the `activationData` bytes for one card network (provisioning spec section 5).
///
/// The returned bytes are what the app hands PassKit; the API base64-encodes them once, and
/// PassKit's own base64 on the way to the network yields the network's value. Never base64
/// them here as well.
public protocol ActivationDataProvider: Sendable {
    /// A short name for logs and configuration ("mastercard_tav", "issuer_otp").
    var name: String { get }

    /// The activation data for one provisioning or verification.
    ///
    /// - Throws: ``CryptoError`` when the value cannot be produced.
    func activationData(for request: ActivationDataRequest) throws -> [UInt8]
}

/// The outcome of checking activation data the issuer issued itself.
public enum ActivationDataVerification: String, Sendable, Equatable {
    /// Authentic, bound to this card and nonce, and not expired.
    case valid
    /// Authentic but past its validity.
    case expired
    /// Not produced by us for this card, nonce and expiry (or malformed).
    case invalid
}
