import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdRisk
import IssuerdStorage
import IssuerdWire

/// What a push to Google Pay and a push to Samsung Pay share: the card's network provider, looked
/// up before anything is decided, the shared transaction, and the network's payload made for the
/// wallet from the card opened for it (``push(_:customerID:cardID:now:claim:to:respond:)``).
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

    /// The wallet a push goes to, and what the request said about it.
    struct Target {
        /// The attempt's channel (`google_pay`, `samsung_pay`).
        var channel: RequestChannel
        /// The wallet the payload is made for.
        var wallet: WalletName
        /// The wallet's name in refusals and the log (`Google Pay`).
        var label: String
        /// The wallet's device and account ids, as sent.
        var walletIDs: (deviceID: String?, accountID: String?)
        /// Their names in the body, for the error when the network needs them.
        var fields: (String, String)
        /// The device the card goes to.
        var device: DeviceInfo?
        /// Further request facts (never a PAN).
        var facts: [String: JSONValue] = [:]
    }

    /// What a green or yellow push hands the route's answer: the decision, the card opened from
    /// the vault, and the network's payload made for the wallet.
    struct Pushed {
        var approval: InAppProvisioning.Approval
        var card: PushedCard
        /// The network's opaque payment card for the wallet.
        var payload: String
        /// The network (`mastercard`, `visa`).
        var network: String

        /// The decision as every answer carries it.
        var decision: Decision {
            Decision(
                flow: approval.decision.flow.description, attemptId: approval.attemptID, reasons: approval.reasons)
        }
        /// The methods a yellow decision allows; nil for green.
        var stepUpMethods: [String]? {
            approval.decision.flow == .yellow ? approval.decision.stepUpMethods.methodNames : nil
        }
        /// What the wallet shows for the card.
        var displayName: String {
            approval.card.localizedDescription ?? CardRoutes.defaultDescription(approval.card)
        }
    }

    /// A push to `target`: the card's network provider first (a network issuerd cannot push to is
    /// answered before anything is decided), then the shared transaction
    /// (``InAppProvisioning/push(_:customerID:cardID:now:claim:push:answer:)``: rate limits, the
    /// risk decision, orange → 403, the attempt of the target's channel), and for green or yellow
    /// the JSON `respond` makes of the payload.
    ///
    /// - Throws: what ``provider(cardID:customerID:walletIDs:fields:)`` and the transaction throw.
    func push(
        _ request: HTTPRequest, customerID: String, cardID: String, now: Date, claim: IdempotencyClaim?,
        to target: Target, respond: (Pushed) throws -> some Encodable
    ) throws -> HTTPResponse {
        let provider = try provider(
            cardID: cardID, customerID: customerID, walletIDs: (target.walletIDs.deviceID, target.walletIDs.accountID),
            fields: target.fields)
        var facts = target.facts
        if let device = target.device { facts["device"] = InAppProvisioning.deviceFacts(device) }
        let push = InAppProvisioning.Push(
            channel: target.channel, device: target.device, facts: facts, wallet: target.label)
        return try provisioning.push(
            request, customerID: customerID, cardID: cardID, now: now, claim: claim, push: push
        ) { approval, record in
            let card = try pushedCard(approval)
            let flow = approval.decision.flow
            let payload = try provider.opaquePaymentCard(
                card,
                to: PushWallet(
                    name: target.wallet, deviceID: target.walletIDs.deviceID, accountID: target.walletIDs.accountID,
                    cardholderVerified: flow == .green),
                now: now)
            let response = try respond(
                Pushed(approval: approval, card: card, payload: payload, network: provider.network))
            let log = InAppProvisioning.LogLine(
                level: .info, message: "\(target.label.lowercased()) push answered",
                metadata: ["attemptId": .string(approval.attemptID), "flow": .string(flow.description)])
            return .answer(
                try .json(response), channel: record.channel.name, flow: flow, hits: approval.decision.hits, log: log)
        }
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
