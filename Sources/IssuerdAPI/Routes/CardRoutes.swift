import Foundation
import IssuerdAuth
import IssuerdCrypto
import IssuerdHTTP
import IssuerdStorage
import IssuerdWire

/// Routes for the issuer app: GET /v1/cards, POST /v1/cards/{cardId}/apple-pay/provision.
enum CardRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        table.add(.get, "/v1/cards") { request in
            let now = context.now
            let customerID = try context.appTokens.customerID(for: request, now: now)
            let cards = try context.database.withConnection {
                try CardStore.list(customerID: customerID, connection: $0)
            }
            return try .json(CardList(cards: cards.map { summary($0, now: now) }))
        }

        let provisioning = InAppProvisioning(context: context, risk: RiskService(context: context))
        table.add(.post, "/v1/cards/{cardId}/apple-pay/provision") { request in
            let now = context.now
            let customerID = try context.appTokens.customerID(for: request, now: now)
            guard let cardID = request.pathParameters["cardId"], (1...64).contains(cardID.utf8.count) else {
                throw APIErrors.cardNotFound()
            }
            return try context.idempotency.run(request, scope: "app:\(customerID):provision:\(cardID)") { claim in
                try provisioning.provision(request, customerID: customerID, cardID: cardID, now: now, claim: claim)
            }
        }
    }

    /// The app's view of a card: no PAN; eligible for Wallet only while active and unexpired.
    static func summary(_ card: CardRecord, now: Date) -> CardSummary {
        CardSummary(
            cardId: card.cardID, cardholderName: card.cardholderName, primaryAccountSuffix: card.lastFour,
            localizedDescription: card.localizedDescription ?? defaultDescription(card),
            paymentNetwork: card.paymentNetwork,
            primaryAccountIdentifier: card.primaryAccountIdentifier, status: card.status.rawValue,
            walletEligible: card.status == .active && !isExpired(card.expiration, now: now))
    }

    /// `Visa •••• 1234`: what Wallet shows when the issuer set no description.
    static func defaultDescription(_ card: CardRecord) -> String {
        let names = [
            "visa": "Visa", "mastercard": "Mastercard", "amex": "American Express", "discover": "Discover",
            "jcb": "JCB", "unionpay": "UnionPay",
        ]
        return "\(names[card.paymentNetwork] ?? "Card") •••• \(card.lastFour)"
    }

    /// A card is valid through the last day of its expiry month (UTC).
    static func isExpired(_ expiration: CardExpiration, now: Date) -> Bool {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        let today = calendar.dateComponents([.year, .month], from: now)
        let current = (today.year ?? 0) * 12 + (today.month ?? 0)
        return (2000 + expiration.year) * 12 + expiration.month < current
    }
}
