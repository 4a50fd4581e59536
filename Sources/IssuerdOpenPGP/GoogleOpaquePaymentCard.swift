import Foundation
import IssuerdCore

/// Google's own opaque payment card for Unified Android Push Provisioning (Google Pay's "Push
/// Provisioning API", Google OPC): the clear-text JSON
/// `{"protocolHeader":{"version":1},"validationContext":{"serverSessionId":…},
/// "paymentCard":{"accountNumber","expiryMonth","expiryYear"}}`, signed with the issuer's OpenPGP
/// key and encrypted to Google's, then standard Base64 with padding (RFC 4648 §4, Google's current
/// page).
public enum GoogleOpaquePaymentCard {
    /// `protocolHeader.version`, assigned by Google (a JSON number, as in Google's example).
    public static let protocolVersion = 1
    /// The longest `serverSessionId` accepted (Google gives a UUID).
    public static let maximumServerSessionIDLength = 128

    /// The sealed, Base64 object.
    ///
    /// - Parameters:
    ///   - pan: The card number.
    ///   - expiryMonth: `MM`.
    ///   - expiryYear: `YY`.
    ///   - serverSessionID: The session id the Google SDK gave the app.
    ///   - sealer: The issuer's signing key and Google's encryption key.
    /// - Throws: ``OpenPGPError``.
    public static func make(
        pan: PrimaryAccountNumber, expiryMonth: String, expiryYear: String, serverSessionID: String,
        sealer: OpenPGPSealer
    ) throws -> String {
        let object = ClearText(
            protocolHeader: .init(version: protocolVersion),
            validationContext: .init(serverSessionId: serverSessionID),
            paymentCard: .init(accountNumber: pan.unsafeDigits, expiryMonth: expiryMonth, expiryYear: expiryYear))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        let message = try sealer.seal(Array(try encoder.encode(object)))
        return Data(message).base64EncodedString()
    }

    struct ClearText: Encodable {
        struct ProtocolHeader: Encodable { var version: Int }
        struct ValidationContext: Encodable { var serverSessionId: String }
        struct PaymentCard: Encodable {
            var accountNumber: String
            var expiryMonth: String
            var expiryYear: String
        }

        var protocolHeader: ProtocolHeader
        var validationContext: ValidationContext
        var paymentCard: PaymentCard
    }
}
