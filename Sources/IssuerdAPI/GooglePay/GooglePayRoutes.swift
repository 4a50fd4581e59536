import IssuerdHTTP
import IssuerdOutbox
import IssuerdWire

/// Routes for the issuer's Android app: Google Pay push provisioning and the app-to-app yellow
/// path (docs/android-integration.md). Both take the app's JWT, checked on the request head.
enum GooglePayRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        let push = GooglePayPush(
            provisioning: InAppProvisioning(context: context, risk: RiskService(context: context)),
            crypto: context.googlePay)
        table.add(.post, "/v1/cards/{cardId}/google-pay/push-provisioning") { request in
            let now = context.now
            let customerID = try context.appTokens.customerID(for: request, now: now)
            let cardID = try cardID(request)
            return try context.idempotency.run(request, scope: "app:\(customerID):google-pay:\(cardID)") { claim in
                try push.push(request, customerID: customerID, cardID: cardID, now: now, claim: claim)
            }
        }

        let activation = GooglePayActivation(
            verifier: WalletVerifier(
                database: context.database, vault: context.vault, crypto: context.crypto,
                settings: context.configuration.stepUp, metrics: StepUpMetrics(context.metrics)))
        table.add(.post, "/v1/cards/{cardId}/google-pay/activations") { request in
            let now = context.now
            let customerID = try context.appTokens.customerID(for: request, now: now)
            let cardID = try cardID(request)
            let body = try request.decodeJSON(GooglePayActivationRequest.self)
            return try .json(try activation.activate(body, customerID: customerID, cardID: cardID, now: now))
        }
    }

    private static func cardID(_ request: HTTPRequest) throws -> String {
        guard let cardID = request.pathParameters["cardId"], (1...64).contains(cardID.utf8.count) else {
            throw APIErrors.cardNotFound()
        }
        return cardID
    }
}
