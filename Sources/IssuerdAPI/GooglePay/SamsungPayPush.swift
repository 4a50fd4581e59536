import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdStorage
import IssuerdWire

/// `POST /v1/cards/{cardId}/samsung-pay/push-provisioning`: the same push as Google Pay's (the
/// card's network provider first, then the shared transaction, channel `samsung_pay`). Samsung
/// defines no payload of its own: the answer carries the network's, Visa's encrypted payment
/// instrument for Samsung's Visa token requestor id and the SDK's `device_id`/`wallet_user_id`,
/// or Mastercard's opaque payment card, with the `tokenizationProvider` the SDK's `AddCardInfo`
/// takes.
struct SamsungPayPush: Sendable {
    let provisioning: InAppProvisioning
    let crypto: GooglePayCrypto

    /// `AddCardInfo`'s tokenization provider per network.
    static let tokenizationProviders = ["visa": "VI", "mastercard": "MI"]

    /// Unverified (V5): Mastercard's payload goes to Samsung Pay as it goes to Google Pay, the
    /// opaque card's Base64 text; Samsung's carrier for it is not public.
    static func mastercardCarrier(_ opaquePaymentCard: String) -> String { opaquePaymentCard }

    func push(
        _ request: HTTPRequest, customerID: String, cardID: String, now: Date, claim: IdempotencyClaim?
    ) throws -> HTTPResponse {
        let body = try provisioning.validated(cardID: cardID, customerID: customerID) {
            try Self.validate(request.decodeJSON(SamsungPayPushRequest.self))
        }
        let wallet = WalletPush(provisioning: provisioning, crypto: crypto)
        let provider = try wallet.provider(
            cardID: cardID, customerID: customerID,
            walletIDs: (body.walletInfo?.deviceId, body.walletInfo?.walletUserId),
            fields: ("walletInfo.deviceId", "walletInfo.walletUserId"))
        var facts: [String: JSONValue] = [:]
        if let device = body.device { facts["device"] = InAppProvisioning.deviceFacts(device) }
        let push = InAppProvisioning.Push(
            channel: .samsungPay, device: body.device, facts: facts, wallet: "Samsung Pay")
        return try provisioning.push(
            request, customerID: customerID, cardID: cardID, now: now, claim: claim, push: push
        ) { approval, record in
            let card = approval.card
            let flow = approval.decision.flow
            let payload = try provider.opaquePaymentCard(
                try wallet.pushedCard(approval),
                to: PushWallet(
                    name: .samsungPay, deviceID: body.walletInfo?.deviceId, accountID: body.walletInfo?.walletUserId,
                    cardholderVerified: flow == .green),
                now: now)
            let response = SamsungPayPushResponse(
                attemptId: approval.attemptID,
                decision: Decision(flow: flow.description, attemptId: approval.attemptID, reasons: approval.reasons),
                stepUpMethods: flow == .yellow ? approval.decision.stepUpMethods.methodNames : nil,
                provisionPayload: provider.network == "mastercard" ? Self.mastercardCarrier(payload) : payload,
                tokenizationProvider: Self.tokenizationProviders[provider.network] ?? provider.network,
                network: provider.network, lastDigits: card.lastFour,
                displayName: card.localizedDescription ?? CardRoutes.defaultDescription(card))
            let log = InAppProvisioning.LogLine(
                level: .info, message: "samsung pay push answered",
                metadata: ["attemptId": .string(approval.attemptID), "flow": .string(flow.description)])
            return .answer(
                try .json(response), channel: record.channel.name, flow: flow, hits: approval.decision.hits, log: log)
        }
    }

    /// Bounds: the wallet's ids as ``WalletPush/checkWalletID(_:field:)`` says; the device as
    /// every push's.
    static func validate(_ body: SamsungPayPushRequest) throws -> SamsungPayPushRequest {
        try WalletPush.checkWalletID(body.walletInfo?.deviceId, field: "walletInfo.deviceId")
        try WalletPush.checkWalletID(body.walletInfo?.walletUserId, field: "walletInfo.walletUserId")
        guard let device = body.device else { throw APIErrors.invalidRequest("device is required", field: "device") }
        try ProvisioningInput.check(device)
        return body
    }
}
