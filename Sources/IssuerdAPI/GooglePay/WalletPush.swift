import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdStorage

/// What a push to Google Pay and a push to Samsung Pay share around the decision: the card's
/// network provider, looked up before anything is decided, and the card opened for its payload.
struct WalletPush: Sendable {
    let provisioning: InAppProvisioning
    let crypto: GooglePayCrypto

    /// The longest wallet id accepted (device id, wallet account id).
    static let maximumWalletIDLength = 128

    /// The provider of the caller's card's network.
    ///
    /// - Parameters:
    ///   - walletIDs: The device and wallet account ids the request sent.
    ///   - fields: Their names in the body, for the error.
    /// - Throws: 404 `card_not_found` for a card that is not the caller's; 422
    ///   `<network>_push_not_configured` or `push_network_unsupported`; 400 `invalid_request`
    ///   naming the missing wallet id when the network's payload carries them (Visa).
    func provider(
        cardID: String, customerID: String, walletIDs: (String?, String?), fields: (String, String)
    ) throws -> any OpaqueCardProvider {
        guard
            let stored = try provisioning.context.database.withConnection({
                try CardStore.find(cardID, ownedBy: customerID, connection: $0)
            })
        else { throw APIErrors.cardNotFound() }
        let provider = try crypto.provider(network: stored.paymentNetwork)
        if provider.requiresWalletIDs {
            for (value, field) in [(walletIDs.0, fields.0), (walletIDs.1, fields.1)] where value == nil {
                throw APIErrors.invalidRequest("\(field) is required for a \(provider.network) card", field: field)
            }
        }
        return provider
    }

    /// The approved card with its PAN opened from the vault for this one answer.
    func pushedCard(_ approval: InAppProvisioning.Approval) throws -> PushedCard {
        let card = approval.card
        let pan = try CardStore.openPAN(card, vault: provisioning.context.vault)
        return PushedCard(
            pan: pan, expiration: card.expiration, cardholderName: card.cardholderName, cardID: card.cardID,
            country: card.country)
    }

    /// A wallet id, when sent: 1 to 128 printable ASCII characters.
    static func checkWalletID(_ value: String?, field: String) throws {
        guard let value else { return }
        guard (1...maximumWalletIDLength).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F })
        else {
            throw APIErrors.invalidRequest(
                "\(field) must be 1 to \(maximumWalletIDLength) printable ASCII characters", field: field)
        }
    }
}
