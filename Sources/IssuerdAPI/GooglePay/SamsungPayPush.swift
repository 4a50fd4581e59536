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
        let target = WalletPush.Target(
            channel: .samsungPay, wallet: .samsungPay, label: "Samsung Pay",
            walletIDs: (body.walletInfo?.deviceId, body.walletInfo?.walletUserId),
            fields: ("walletInfo.deviceId", "walletInfo.walletUserId"), device: body.device)
        return try WalletPush(provisioning: provisioning, crypto: crypto).push(
            request, customerID: customerID, cardID: cardID, now: now, claim: claim, to: target
        ) { pushed in
            let card = pushed.approval.card
            return SamsungPayPushResponse(
                attemptId: pushed.approval.attemptID,
                decision: pushed.decision, stepUpMethods: pushed.stepUpMethods,
                provisionPayload: pushed.network == "mastercard"
                    ? Self.mastercardCarrier(pushed.payload) : pushed.payload,
                tokenizationProvider: Self.tokenizationProviders[pushed.network] ?? pushed.network,
                network: pushed.network, lastDigits: card.lastFour,
                displayName: pushed.displayName)
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
