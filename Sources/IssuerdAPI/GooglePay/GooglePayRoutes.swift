import IssuerdHTTP
import IssuerdOutbox
import IssuerdWire

/// Routes for the issuer's Android app: push provisioning to Google Pay and Samsung Pay, and the
/// app-to-app yellow path both wallets open (docs/android-integration.md). All take the app's
/// JWT, checked on the request head.
enum GooglePayRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        let provisioning = InAppProvisioning(context: context, risk: RiskService(context: context))
        let push = GooglePayPush(provisioning: provisioning, crypto: context.googlePay)
        table.add(.post, "/v1/cards/{cardId}/google-pay/push-provisioning") { request in
            let now = context.now
            let customerID = try context.appTokens.customerID(for: request, now: now)
            let cardID = try cardID(request)
            return try context.idempotency.run(request, scope: "app:\(customerID):google-pay:\(cardID)") { claim in
                try push.push(request, customerID: customerID, cardID: cardID, now: now, claim: claim)
            }
        }
        let samsung = SamsungPayPush(provisioning: provisioning, crypto: context.googlePay)
        table.add(.post, "/v1/cards/{cardId}/samsung-pay/push-provisioning") { request in
            let now = context.now
            let customerID = try context.appTokens.customerID(for: request, now: now)
            let cardID = try cardID(request)
            return try context.idempotency.run(request, scope: "app:\(customerID):samsung-pay:\(cardID)") { claim in
                try samsung.push(request, customerID: customerID, cardID: cardID, now: now, claim: claim)
            }
        }

        let activation = GooglePayActivation(
            verifier: WalletVerifier(
                database: context.database, vault: context.vault, crypto: context.crypto,
                settings: context.configuration.stepUp, metrics: StepUpMetrics(context.metrics)))
        // Samsung Wallet's app-to-app ID&V opens the issuer app as Google Wallet does; both
        // paths activate through the same function.
        for path in ["/v1/cards/{cardId}/google-pay/activations", "/v1/cards/{cardId}/samsung-pay/activations"] {
            table.add(.post, path) { request in
                let now = context.now
                let customerID = try context.appTokens.customerID(for: request, now: now)
                let cardID = try cardID(request)
                let body = try request.decodeJSON(GooglePayActivationRequest.self)
                return try .json(try activation.activate(body, customerID: customerID, cardID: cardID, now: now))
            }
        }
    }

    private static func cardID(_ request: HTTPRequest) throws -> String {
        guard let cardID = request.pathParameters["cardId"], (1...64).contains(cardID.utf8.count) else {
            throw APIErrors.cardNotFound()
        }
        return cardID
    }
}
