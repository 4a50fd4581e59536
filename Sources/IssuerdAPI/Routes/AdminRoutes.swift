import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres
import IssuerdStorage
import IssuerdWire

/// Routes for analysts and operators: customers, cards and card status.
///
/// Every caller is an API key: `analyst` may read, `admin` may also change; `ivr` may do nothing
/// here. Every change commits in one transaction with its audit entry.
enum AdminRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        let changes = context.metrics.counter(
            "issuerd_admin_changes_total", help: "Changes made through the admin API and the CLI, by action.",
            labels: ["action"])
        let tokens = context.metrics.counter(
            "issuerd_card_status_tokens_total",
            help: "Tokens suspended, resumed or deleted because their card changed status.",
            labels: ["status"])

        table.add(.post, "/v1/admin/customers") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.admin])
            return try context.idempotency.run(request, scope: "\(principal.auditActor):customers") { claim in
                let record = try CustomerAdministration.validate(try request.decodeJSON(CustomerUpsertRequest.self))
                let now = context.now
                // The answer commits with the change: a retry after a lost acknowledgement gets the
                // same 201, not a second upsert answered 200.
                let (stored, created, response) = try context.database.transaction { connection in
                    let (stored, created) = try CustomerAdministration.upsert(
                        record, actor: principal.auditActor, now: now, connection: connection)
                    let response = try HTTPResponse.json(
                        CustomerAdministration.view(stored, created: created), status: created ? 201 : 200)
                    try Self.record(response, claim: claim, connection: connection)
                    return (stored, created, response)
                }
                claim?.markRecorded()
                changes.increment(labels: [created ? "customer.created" : "customer.updated"])
                request.logger.info(
                    "customer upserted", ["customerId": .string(stored.customerID), "created": .bool(created)])
                return response
            }
        }

        table.add(.post, "/v1/admin/cards") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.admin])
            return try context.idempotency.run(request, scope: "\(principal.auditActor):cards") { claim in
                let now = context.now
                let card = try CardRegistration.validate(try request.decodeJSON(CardCreateRequest.self), now: now)
                // The answer commits with the card: a retry after a lost acknowledgement gets the
                // same 201, not 409 "already exists".
                let (record, response) = try context.database.transaction { connection in
                    let record = try CardRegistration.register(
                        card, actor: principal.auditActor, now: now, vault: context.vault, connection: connection)
                    let response = try HTTPResponse.json(CardRegistration.adminCard(record), status: 201)
                    try Self.record(response, claim: claim, connection: connection)
                    return (record, response)
                }
                claim?.markRecorded()
                changes.increment(labels: ["card.created"])
                request.logger.info("card registered", ["cardId": .string(record.cardID), "pan": card.pan.logValue])
                return response
            }
        }

        table.add(.get, "/v1/admin/cards/{cardId}") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.admin, .analyst])
            let cardID = try Self.cardID(request)
            guard let record = try context.database.withConnection({ try CardStore.find(cardID, connection: $0) })
            else {
                throw Self.cardNotFound()
            }
            return try .json(CardRegistration.adminCard(record))
        }

        table.add(.get, "/v1/admin/cards/{cardId}/tokens") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.admin, .analyst])
            let cardID = try Self.cardID(request)
            let tokens = try context.database.withConnection { connection -> [TokenStore.AdminView]? in
                guard try CardStore.find(cardID, connection: connection) != nil else { return nil }
                return try TokenStore.adminViews(cardID: cardID, connection: connection)
            }
            guard let tokens else { throw Self.cardNotFound() }
            return try .json(CardTokensView(cardId: cardID, tokens: tokens))
        }

        table.add(.post, "/v1/admin/cards/{cardId}/status") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.admin])
            let cardID = try Self.cardID(request)
            let body = try request.decodeJSON(CardStatusRequest.self)
            guard body.status.utf8.count <= 16, let status = CardStatusValue(rawValue: body.status),
                CardStatusValue.settable.contains(status)
            else {
                throw AdminValidation.invalid(
                    "status", "must be one of \(CardStatusValue.settable.map(\.rawValue).joined(separator: ", "))")
            }
            let reason = try body.reason.map {
                try AdminValidation.text($0, field: "reason", maxLength: 256, allowEmpty: true)
            }
            let now = context.now
            let outcome = try context.database.transaction { connection in
                try CardStatusChange.apply(
                    cardID: cardID, to: status, reason: reason, actor: principal.auditActor, now: now,
                    reissue: ReissueContext(vault: context.vault, keys: context.configuration.reissue),
                    connection: connection)
            }
            guard let outcome else { throw Self.cardNotFound() }
            if outcome.previous != status {
                changes.increment(labels: ["card.status_changed"])
                if outcome.tokensAffected > 0 {
                    tokens.increment(by: Double(outcome.tokensAffected), labels: [status.rawValue])
                }
                request.logger.info(
                    "card status changed",
                    [
                        "cardId": .string(cardID), "from": .string(outcome.previous.rawValue),
                        "to": .string(status.rawValue),
                        "tokensAffected": .int(outcome.tokensAffected),
                    ])
            }
            return try .json(
                CardStatusAnswer(card: CardRegistration.adminCard(outcome.card), tokensAffected: outcome.tokensAffected)
            )
        }
    }

    /// Stores `response` as the claim's answer in the change's own transaction; zero rows means a
    /// retry took the claim over, and the change rolls back.
    static func record(_ response: HTTPResponse, claim: IdempotencyClaim?, connection: PostgresConnection) throws {
        if let claim, try connection.execute(claim.recording(response)) != 1 { throw IdempotencyClaim.takenOver() }
    }

    /// The path's card id; one that could never exist is simply not found.
    static func cardID(_ request: HTTPRequest) throws -> String {
        guard let id = request.pathParameters["cardId"], (try? AdminValidation.identifier(id, field: "cardId")) != nil
        else {
            throw cardNotFound()
        }
        return id
    }

    static func cardNotFound() -> HTTPError {
        APIErrors.cardNotFound()
    }
}

/// `AdminCard` plus `tokensAffected`, flat in one object.
struct CardStatusAnswer: Encodable, Sendable {
    var card: AdminCard
    var tokensAffected: Int

    private enum CodingKeys: String, CodingKey { case tokensAffected }

    func encode(to encoder: any Encoder) throws {
        try card.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(tokensAffected, forKey: .tokensAffected)
    }
}

/// `GET /v1/admin/cards/{cardId}/tokens`: the card's tokens, newest first (at most
/// ``TokenStore/adminListLimit``).
struct CardTokensView: Encodable, Sendable {
    var cardId: String
    var tokens: [TokenStore.AdminView]
}
