import Foundation
import IssuerdRisk
import IssuerdStorage
import IssuerdWire

/// The facts of one add-card request that the risk rules may read, gathered by the route
/// that received it: the card and customer on file, what the caller said about the device
/// and the wallet, and the decision time.
///
/// Every optional stays nil when the caller did not send it: the rules see an unknown, never
/// a default (docs/rules.md, "Unknowns").
struct RiskRequest: Sendable {
    /// How the request arrived.
    var channel: RequestChannel
    /// The card on file.
    var card: CardRecord
    /// The card's owner, when on file.
    var customer: CustomerRecord?
    /// The device, as the caller described it.
    var device: DeviceInfo?
    /// The wallet's risk signals (TSP authorizations only).
    var wallet: WalletSignals?
    /// `manual`, `camera`, `push` or `on_file` (TSP only).
    var tokenizationSource: TokenizationSource?
    /// The network's token requestor id (TSP only).
    var tokenRequestorID: String?
    /// Active tokens already on the device, from the wallet (TSP only).
    var deviceActiveTokens: Int?
    /// Active tokens of this card in any wallet, from the `tokens` table.
    var cardActiveTokens: Int?
    /// The decision time.
    var time: Date
    /// What only Mastercard's Authorize Service sends (MDES only).
    var mdes: MDESSignals? = nil

    /// MDES's own facts, as sent (docs/rules.md: `request.token_type`, `device.form_factor`, …).
    struct MDESSignals: Sendable {
        var tokenType: String
        var walletID: String?
        var accountIDHash: String?
        var accountLifetime: Int?
        var formFactor: String?
        var osName: String?
        var storageTechnology: String?
    }

    /// The subject whose history velocity reads.
    var velocitySubject: VelocitySubject {
        VelocitySubject(cardID: card.cardID, deviceID: device?.id, customerID: card.customerID)
    }
}
