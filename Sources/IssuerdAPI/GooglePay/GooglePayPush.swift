import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdOpenPGP
import IssuerdStorage
import IssuerdWire

/// `POST /v1/cards/{cardId}/google-pay/push-provisioning`: the card's network provider first (a
/// network issuerd cannot push to is answered before anything is decided), then the push's shared
/// transaction (``InAppProvisioning/push(_:customerID:cardID:now:claim:push:answer:)``: rate
/// limits, the risk decision, orange → 403, the attempt of channel `google_pay`), and for green or
/// yellow what the app hands `pushTokenize`: Mastercard's opaque card, or Visa's encrypted payment
/// instrument for Google's Visa token requestor id and the wallet ids the app sent.
struct GooglePayPush: Sendable {
    let provisioning: InAppProvisioning
    let crypto: GooglePayCrypto

    func push(
        _ request: HTTPRequest, customerID: String, cardID: String, now: Date, claim: IdempotencyClaim?
    ) throws -> HTTPResponse {
        let body = try provisioning.validated(cardID: cardID, customerID: customerID) {
            try Self.validate(request.decodeJSON(GooglePayPushRequest.self))
        }
        let sealer = body.serverSessionId == nil ? nil : crypto.googleSealer
        let target = WalletPush.Target(
            channel: .googlePay, wallet: .googlePay, label: "Google Pay",
            walletIDs: (body.walletInfo?.deviceId, body.walletInfo?.walletAccountId),
            fields: ("walletInfo.deviceId", "walletInfo.walletAccountId"), device: body.device,
            facts: ["googleOpaquePaymentCard": .bool(sealer != nil)])
        return try WalletPush(provisioning: provisioning, crypto: crypto).push(
            request, customerID: customerID, cardID: cardID, now: now, claim: claim, to: target
        ) { pushed in
            let card = pushed.approval.card
            let google = try body.serverSessionId.flatMap { session in
                try sealer.map {
                    try GoogleOpaquePaymentCard.make(
                        pan: pushed.card.pan, expiryMonth: String(pushed.card.expiration.compact.prefix(2)),
                        expiryYear: String(pushed.card.expiration.compact.suffix(2)), serverSessionID: session,
                        sealer: $0)
                }
            }
            return GooglePayPushResponse(
                attemptId: pushed.approval.attemptID,
                decision: pushed.decision, stepUpMethods: pushed.stepUpMethods,
                opaquePaymentCard: pushed.payload, tokenServiceProvider: pushed.network, network: pushed.network,
                lastDigits: card.lastFour,
                displayName: pushed.displayName,
                userAddress: GooglePayUserAddress(
                    name: card.cardholderName, countryCode: card.country,
                    phoneNumber: pushed.approval.customer?.phoneNumber),
                googleOpaquePaymentCard: google)
        }
    }

    /// Bounds (docs/openapi.yaml): `serverSessionId` 1 to 128 printable characters; the wallet's ids as
    /// ``WalletPush/checkWalletID(_:field:)`` says; the device as every push's.
    static func validate(_ body: GooglePayPushRequest) throws -> GooglePayPushRequest {
        if let session = body.serverSessionId {
            guard (1...GoogleOpaquePaymentCard.maximumServerSessionIDLength).contains(session.utf8.count),
                session.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F })
            else {
                throw APIErrors.invalidRequest(
                    "serverSessionId must be 1 to \(GoogleOpaquePaymentCard.maximumServerSessionIDLength) printable ASCII characters",
                    field: "serverSessionId")
            }
        }
        try WalletPush.checkWalletID(body.walletInfo?.deviceId, field: "walletInfo.deviceId")
        try WalletPush.checkWalletID(body.walletInfo?.walletAccountId, field: "walletInfo.walletAccountId")
        guard let device = body.device else { throw APIErrors.invalidRequest("device is required", field: "device") }
        try ProvisioningInput.check(device)
        return body
    }
}
