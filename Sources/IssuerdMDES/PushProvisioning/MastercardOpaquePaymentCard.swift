import Foundation
import IssuerdCore
import IssuerdCrypto

/// Mastercard's opaque payment card for issuer-initiated digitization through a wallet
/// (`pushTokenize` on Android; MDES tokenize's `fundingAccountInfo`): Base64 of a JSON object carrying the
/// card data field-level-encrypted to Mastercard's key and the signed Tokenization Authentication
/// Value, which the wallet forwards to MDES unopened.
///
/// What Mastercard leaves unverified is kept in one place each: the object's nesting in
/// ``envelope(encryptedPayload:tokenizationAuthenticationValue:)``, the TAV's signed-data layout in
/// ``MastercardTAVProvider/signedData(pan:expiry:validUntil:)``, and the `publicKeyFingerprint`
/// in the ``MastercardEncryptionKey`` the caller passes (docs/networks.md, "Google Pay push provisioning").
public enum MastercardOpaquePaymentCard {
    /// `source` of the funding account data: the card was pushed from the issuer's app.
    public static let source = "ACCOUNT_ADDED_VIA_APPLICATION"
    /// `accountHolderName` is at most 27 characters.
    public static let maximumAccountHolderNameLength = 27

    /// The card's opaque payment card.
    ///
    /// - Parameters:
    ///   - pan: The card number (only inside the encrypted data).
    ///   - expiration: The card's expiry.
    ///   - accountHolderName: The cardholder's name, cut to 27 characters.
    ///   - cardReference: The issuer's card id (binds nothing in the TAV; required by the signer's request).
    ///   - tav: The issuer's TAV signer (the one Apple's activation data uses).
    ///   - recipient: Mastercard's encryption key.
    ///   - now: The time `dataValidUntilTimestamp` counts from.
    /// - Returns: The Base64 text the app hands `pushTokenize`.
    /// - Throws: ``FieldLevelEncryptionError`` or ``CryptoError`` when a step fails.
    public static func make(
        pan: PrimaryAccountNumber, expiration: CardExpiration, accountHolderName: String, cardReference: String,
        tav: MastercardTAVProvider, recipient: MastercardEncryptionKey, now: Date
    ) throws -> String {
        let validUntil = MastercardTAVProvider.timestamp(now.addingTimeInterval(tav.validity))
        let data = FundingAccountData(
            cardAccountData: .init(
                accountNumber: pan.unsafeDigits, expiryMonth: String(expiration.compact.prefix(2)),
                expiryYear: String(expiration.compact.suffix(2))),
            accountHolderData: .init(
                accountHolderName: String(accountHolderName.prefix(maximumAccountHolderNameLength))),
            source: source, dataValidUntilTimestamp: validUntil)
        let encrypted = try FieldLevelEncryption.seal(encoding: data, to: recipient)
        let tavJSON = try tav.activationData(
            for: ActivationDataRequest(
                primaryAccountNumber: pan, expiration: expiration, cardReference: cardReference, nonce: [], now: now))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        let json = try encoder.encode(
            envelope(
                encryptedPayload: encrypted, tokenizationAuthenticationValue: BinaryEncoding.base64String(tavJSON)))
        return BinaryEncoding.base64String(Array(json))
    }

    /// The object's layout: `{"fundingAccountInfo":{"encryptedPayload":{…}},
    /// "tokenizationAuthenticationValue":"<Base64 of the TAV JSON>"}`, the field names of MDES's
    /// tokenize request. Unverified for the wallet carrier (docs/networks.md, open point 7: some processors
    /// describe a legacy `cardInfo` nesting); change it here once the MDES Issuer Implementation
    /// Guide confirms it.
    public static func envelope(
        encryptedPayload: EncryptedPayload, tokenizationAuthenticationValue: String
    )
        -> Envelope
    {
        Envelope(
            fundingAccountInfo: .init(encryptedPayload: encryptedPayload),
            tokenizationAuthenticationValue: tokenizationAuthenticationValue)
    }

    /// The opaque card's JSON.
    public struct Envelope: Codable, Sendable, Equatable {
        /// The encrypted card data.
        public struct FundingAccountInfo: Codable, Sendable, Equatable {
            /// `FundingAccountData` encrypted to Mastercard.
            public var encryptedPayload: EncryptedPayload
        }

        /// The encrypted card data.
        public var fundingAccountInfo: FundingAccountInfo
        /// Base64 of the TAV JSON.
        public var tokenizationAuthenticationValue: String
    }

    /// The plaintext of `encryptedPayload` (MDES tokenize's `FundingAccountData`).
    struct FundingAccountData: Encodable {
        struct CardAccountData: Encodable {
            var accountNumber: String
            var expiryMonth: String
            var expiryYear: String
        }

        struct AccountHolderData: Encodable {
            var accountHolderName: String
        }

        var cardAccountData: CardAccountData
        var accountHolderData: AccountHolderData
        var source: String
        var dataValidUntilTimestamp: String
    }
}
