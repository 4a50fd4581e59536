import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdKeys
import IssuerdMDES
import IssuerdOpenPGP

/// The card data a network's opaque payment card is made of.
struct PushedCard {
    /// The card number, opened from the vault for this one answer.
    var pan: PrimaryAccountNumber
    var expiration: CardExpiration
    /// The name on the card.
    var cardholderName: String
    /// The issuer's card id.
    var cardID: String
    /// The card's country (ISO 3166-1 alpha-2), when the issuer holds it.
    var country: String?
}

/// Makes one network's opaque payment card for a push to Google Pay (`pushTokenize`, the TSP
/// OPC) or Samsung Pay (`EXTRA_PROVISION_PAYLOAD`): Mastercard's (``MastercardOpaqueCardProvider``)
/// and Visa's encrypted payment instrument (``VisaOpaqueCardProvider``), each built from its
/// settings; without them a card of that network is 422 `<network>_push_not_configured`.
protocol OpaqueCardProvider: Sendable {
    /// The `tokenServiceProvider` and `network` the app passes on (`mastercard`, `visa`).
    var network: String { get }
    /// True when the payload carries the wallet's device and account ids (the request must send them).
    var requiresWalletIDs: Bool { get }

    /// The network's opaque payment card for `wallet`, as the app hands it to the wallet's SDK.
    func opaquePaymentCard(_ card: PushedCard, to wallet: PushWallet, now: Date) throws -> String
}

extension OpaqueCardProvider {
    var requiresWalletIDs: Bool { false }
}

/// Mastercard's: the card data field-level-encrypted to Mastercard's certificate and the signed
/// TAV, Base64 of JSON; the same object for every wallet.
struct MastercardOpaqueCardProvider: OpaqueCardProvider {
    let network = "mastercard"
    let recipient: MastercardEncryptionKey
    let tav: MastercardTAVProvider

    func opaquePaymentCard(_ card: PushedCard, to wallet: PushWallet, now: Date) throws -> String {
        try MastercardOpaquePaymentCard.make(
            pan: card.pan, expiration: card.expiration, accountHolderName: card.cardholderName,
            cardReference: card.cardID, tav: tav, recipient: recipient, now: now)
    }
}

/// What a push to Google Pay or Samsung Pay can make, built once at start-up: a provider per
/// configured network, and the OpenPGP keys of Google's own opaque payment card when both are set.
struct GooglePayCrypto: Sendable {
    private let providers: [String: any OpaqueCardProvider]
    /// The issuer's signing key and Google's encryption key; nil unless both are configured.
    let googleSealer: OpenPGPSealer?

    /// The networks whose push a provider of this build can serve once configured.
    static let pushNetworks = ["mastercard", "visa"]

    /// Builds the providers the settings allow.
    ///
    /// - Parameters:
    ///   - tav: The TAV signer (PEM or HSM); Mastercard needs it beside its certificate.
    ///   - hsm: The HSM, where Visa's key-encryption key may be.
    ///   - extra: Providers of other networks, taking precedence (tests).
    /// - Throws: ``ConfigurationError`` naming the setting that does not load.
    init(
        settings: GooglePaySettings, tav: MastercardTAVProvider?, hsm: HSMKeyStore? = nil,
        extra: [any OpaqueCardProvider] = []
    ) throws {
        var providers: [String: any OpaqueCardProvider] = [:]
        if let pem = settings.mastercardCertificatePEM, let tav {
            let key = "ISSUERD_MDES_MASTERCARD_CERT"
            guard let certificate = try? X509Certificate(pemRepresentation: pem) else {
                throw ConfigurationError(key: key, problem: "must be a PEM certificate")
            }
            let recipient: MastercardEncryptionKey
            do {
                recipient =
                    try settings.mastercardKeyFingerprint.map {
                        try MastercardEncryptionKey(certificate: certificate, fingerprint: $0)
                    } ?? MastercardEncryptionKey(certificate: certificate)
            } catch {
                throw ConfigurationError(
                    key: settings.mastercardKeyFingerprint == nil ? key : "ISSUERD_MDES_MASTERCARD_KEY_FINGERPRINT",
                    problem: "\(error)")
            }
            providers["mastercard"] = MastercardOpaqueCardProvider(recipient: recipient, tav: tav)
        }
        if let visa = settings.visa {
            providers["visa"] = try VisaOpaqueCardProvider(settings: visa, hsm: hsm)
        }
        for provider in extra { providers[provider.network] = provider }
        self.providers = providers
        if let signing = settings.googleSigningKey, let encryption = settings.googleEncryptionKey {
            do {
                googleSealer = try OpenPGPSealer(
                    signingKey: Array(signing.unsafeValue.utf8), recipientKey: Array(encryption.utf8))
            } catch {
                throw ConfigurationError(key: "ISSUERD_GOOGLE_OPC_SIGNING_KEY", problem: "\(error)")
            }
        } else {
            googleSealer = nil
        }
    }

    /// The provider of `network`.
    ///
    /// - Throws: 422 `<network>_push_not_configured` for Mastercard or Visa without their
    ///   settings; 422 `push_network_unsupported` for any other network.
    func provider(network: String) throws -> any OpaqueCardProvider {
        if let provider = providers[network] { return provider }
        guard Self.pushNetworks.contains(network) else {
            throw HTTPError(
                status: 422, code: "push_network_unsupported",
                message: "push provisioning to a wallet is not offered for this card's network",
                context: ["network": .string(network)])
        }
        let missing =
            network == "visa"
            ? "Visa push needs ISSUERD_VISA_ENCRYPTION_API_KEY, ISSUERD_VISA_ENCRYPTION_SHARED_SECRET (or ISSUERD_VISA_ENCRYPTION_KEY_LABEL) and ISSUERD_VISA_CLIENT_APP_ID"
            : "Mastercard push needs ISSUERD_MDES_MASTERCARD_CERT and a TAV signing key"
        throw HTTPError(
            status: 422, code: HTTPError.Code(rawValue: "\(network)_push_not_configured"), message: missing,
            context: ["network": .string(network)])
    }
}
