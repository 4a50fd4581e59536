import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdHTTP
import IssuerdPostgres
import IssuerdStorage

/// Card reissue (docs/networks.md, "Card reissue"): `POST /v1/admin/cards/{cardId}/reissue`
/// (admin, `Idempotency-Key` honoured) and `GET /v1/admin/reissues/{reissueId}` (admin or analyst).
enum ReissueRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        let reissues = context.metrics.counter(
            "issuerd_card_reissues_total", help: "Card reissues started, by reason.", labels: ["reason"])

        table.add(.post, "/v1/admin/cards/{cardId}/reissue") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.admin])
            let cardID = try AdminRoutes.cardID(request)
            return try context.idempotency.run(request, scope: "\(principal.auditActor):reissue:\(cardID)") { claim in
                let now = context.now
                let validated = try CardReissue.validate(try request.decodeJSON(CardReissueRequest.self), now: now)
                let (record, response) = try context.database.transaction { connection in
                    guard
                        let record = try CardReissue.start(
                            validated, oldCardID: cardID, actor: principal.auditActor, now: now, vault: context.vault,
                            keys: context.configuration.reissue, connection: connection)
                    else { throw AdminRoutes.cardNotFound() }
                    let response = try HTTPResponse.json(CardReissue.view(record, tokens: nil), status: 202)
                    try AdminRoutes.record(response, claim: claim, connection: connection)
                    return (record, response)
                }
                claim?.markRecorded()
                reissues.increment(labels: [record.reason.rawValue])
                request.logger.info(
                    "card reissued",
                    [
                        "cardId": .string(cardID), "newCardId": .string(record.newCardID),
                        "reason": .string(record.reason.rawValue), "status": .string(record.status.rawValue),
                    ])
                return response
            }
        }

        table.add(.get, "/v1/admin/reissues/{reissueId}") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.admin, .analyst])
            guard let text = request.pathParameters["reissueId"], text.utf8.count == 36,
                let reissueID = UUID(uuidString: text)
            else { throw Self.notFound() }
            let found = try context.database.withConnection { connection -> CardReissue.View? in
                guard let record = try ReissueStore.find(reissueID, connection: connection) else { return nil }
                return CardReissue.view(record, tokens: try ReissueStore.tokens(reissueID, connection: connection))
            }
            guard let found else { throw Self.notFound() }
            return try .json(found)
        }
    }

    private static func notFound() -> HTTPError {
        HTTPError(status: 404, code: "reissue_not_found", message: "no such reissue")
    }
}
