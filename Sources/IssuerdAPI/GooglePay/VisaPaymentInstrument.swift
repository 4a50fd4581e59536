import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdKeys
import IssuerdRisk

/// Visa's encrypted payment instrument: what an issuer's app hands Google Pay or Samsung Pay to
/// push a Visa card, and the wallet passes to Visa unopened. A compact JWE (``CompactJWE``:
/// `A256GCMKW` + `A256GCM`, the key-encryption key SHA-256 of the shared secret Visa issued with
/// the encryption API key) whose plaintext is the card and the wallet that receives it.
///
/// Visa's push-provisioning guide is confidential; what is public leaves some details open
/// (docs/networks.md, "Visa's encrypted payment instrument"). Each sits in one place here:
/// the `iat` form in ``issuedAt(_:)``, the expiry year's width in ``expirationDate(_:)``, which
/// fields are sent in ``Plaintext``, and how the JWE travels to Google Pay in
/// ``googlePayCarrier(_:)``.
enum VisaPaymentInstrument {
    /// `typ`.
    static let type = "JOSE"
    /// `channelSecurityContext`: the key comes from a shared secret.
    static let channelSecurityContext = "SHARED_SECRET"
    /// `provider.intent` of a push from the issuer's app.
    static let intent = "PUSH_PROV_MOBILE"

    /// Unverified (V1): `iat` as a string of digits, as Visa's samples write it; the alternative
    /// is a JSON number (`.integer`).
    static func issuedAt(_ now: Date) -> CompactJWE.HeaderValue {
        .string(String(Int64(now.timeIntervalSince1970.rounded(.down))))
    }

    /// Unverified (V2): the year in two digits (`"30"`), as the samples write it; four would be
    /// `"20" + …`.
    static func expirationDate(_ expiration: CardExpiration) -> Plaintext.ExpirationDate {
        let compact = expiration.compact
        return .init(month: String(compact.prefix(2)), year: String(compact.suffix(2)))
    }

    /// Unverified (V4): Google Pay takes the compact JWE's own text (its UTF-8 bytes, as the app
    /// passes every opaque card); if Visa's guide asks for Base64 of it, it changes here.
    static func googlePayCarrier(_ jwe: String) -> String { jwe }

    /// The plaintext. Unverified (V3): which fields Visa requires. Sent always: `accountNumber`,
    /// `name`, `expirationDate`, `provider`; sent only when the issuer holds a value, never
    /// empty or invented: `cvv2` (issuerd holds none after issuing) and `billingAddress` (the
    /// card's country, the only part of the address issuerd holds).
    struct Plaintext: Encodable {
        struct ExpirationDate: Encodable, Equatable {
            var month: String
            var year: String
        }

        struct BillingAddress: Encodable, Equatable {
            var line1: String?
            var line2: String?
            var city: String?
            var state: String?
            var postalCode: String?
            var country: String?
        }

        struct Provider: Encodable, Equatable {
            var clientAppID: String
            var clientDeviceID: String
            var clientWalletProvider: String
            var clientWalletAccountID: String
            var intent: String
            var isIDnV: String
        }

        var accountNumber: String
        var cvv2: String?
        var name: String
        var expirationDate: ExpirationDate
        var billingAddress: BillingAddress?
        var provider: Provider
    }

    /// The compact JWE of one push.
    ///
    /// - Parameters:
    ///   - card: The card, its PAN opened from the vault for this answer.
    ///   - wallet: The wallet the card goes to and its ids.
    ///   - clientAppID: The issuer app's id at Visa.
    ///   - apiKey: Visa's encryption API key (`kid`).
    ///   - keyEncryptionKey: SHA-256 of the shared secret, in memory or in the HSM.
    /// - Throws: ``CryptoError`` when sealing fails.
    static func seal(
        _ card: PushedCard, to wallet: PushWallet, clientAppID: String, apiKey: String,
        keyEncryptionKey: any ContentKeyWrapping, now: Date
    ) throws -> String {
        let plaintext = Plaintext(
            accountNumber: card.pan.unsafeDigits, cvv2: nil, name: card.cardholderName,
            expirationDate: expirationDate(card.expiration),
            billingAddress: card.country.map { Plaintext.BillingAddress(country: $0) },
            provider: .init(
                clientAppID: clientAppID, clientDeviceID: wallet.deviceID ?? "",
                clientWalletProvider: wallet.tokenRequestorID(at: .visa), clientWalletAccountID: wallet.accountID ?? "",
                intent: intent, isIDnV: wallet.cardholderVerified ? "true" : "false"))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        var json = Array(try encoder.encode(plaintext))
        defer { _ = json.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        return try CompactJWE.seal(
            json, keyEncryptionKey: keyEncryptionKey,
            header: [
                "kid": .string(apiKey), "typ": .string(type), "channelSecurityContext": .string(channelSecurityContext),
                "iat": issuedAt(now),
            ])
    }
}

/// The wallet a push goes to, with what its SDK told the app.
struct PushWallet: Sendable {
    /// `google_pay` or `samsung_pay`.
    var name: WalletName
    /// The wallet's device id (`getStableHardwareId`, Samsung's `device_id`); required for Visa.
    var deviceID: String?
    /// The wallet account (`getActiveWalletId`, Samsung's `wallet_user_id`); required for Visa.
    var accountID: String?
    /// True when the decision was green: the issuer's app authenticated the cardholder and no
    /// step-up is asked (`isIDnV`); a yellow push leaves the network's ID&V to run.
    var cardholderVerified: Bool

    /// The wallet's token requestor id at `network`.
    func tokenRequestorID(at network: TokenRequestors.Network) -> String {
        TokenRequestors.id(of: name, at: network) ?? ""
    }
}

/// Visa's: the card and wallet sealed into Visa's encrypted payment instrument, the content key
/// wrapped under SHA-256 of the shared secret: in memory when the secret is a file, in the HSM
/// (`CKM_AES_GCM`) when the key was imported there.
struct VisaOpaqueCardProvider: OpaqueCardProvider {
    let network = "visa"
    let apiKey: String
    let clientAppID: String
    let keyEncryptionKey: any ContentKeyWrapping

    /// - Throws: ``ConfigurationError`` naming `ISSUERD_VISA_ENCRYPTION_KEY_LABEL` when the key is
    ///   in an HSM that is not configured, or is missing, not AES-256 allowed to encrypt, or extractable.
    init(settings: VisaPushSettings, hsm: HSMKeyStore?) throws {
        apiKey = settings.apiKey
        clientAppID = settings.clientAppID
        switch settings.sharedSecret {
        case .file(let secret):
            keyEncryptionKey = try CompactJWE.keyEncryptionKey(sharedSecret: secret.unsafeValue)
        case .hsm(let label):
            guard let hsm else {
                throw ConfigurationError(key: VisaPushSettings.keyLabelSetting, problem: "needs ISSUERD_PKCS11_MODULE")
            }
            keyEncryptionKey = try hsm.contentKeyWrapper(label: label, setting: VisaPushSettings.keyLabelSetting)
        }
    }

    var requiresWalletIDs: Bool { true }

    func opaquePaymentCard(_ card: PushedCard, to wallet: PushWallet, now: Date) throws -> String {
        let jwe = try VisaPaymentInstrument.seal(
            card, to: wallet, clientAppID: clientAppID, apiKey: apiKey, keyEncryptionKey: keyEncryptionKey, now: now)
        return wallet.name == .googlePay ? VisaPaymentInstrument.googlePayCarrier(jwe) : jwe
    }
}
