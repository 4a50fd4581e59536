import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdHTTP
import IssuerdStorage
import IssuerdWire

/// Routes for token service providers: tokenization authorize, token events.
enum TSPRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        let authorization = TokenizationAuthorization(context: context, risk: RiskService(context: context))
        table.add(.post, "/v1/tsp/tokenization/authorize") { request in
            let now = context.now
            // The signature is recorded in the authorization's own transaction when it gets that
            // far, and on its own otherwise: a replay is 401 either way (VerifiedTSPSignature).
            let signature = try context.tsp.verify(request, now: now)
            return try signature.guarding(database: context.database, logger: request.logger) {
                try context.idempotency.run(request, scope: "tsp:authorize") { claim in
                    try authorization.authorize(request, now: now, signature: signature, claim: claim)
                }
            }
        }

        table.add(.post, "/v1/tsp/token-events") { request in
            let now = context.now
            try context.tsp.authenticate(request, database: context.database, now: now)
            let body = try request.decodeJSON(TokenEvent.self)
            try TokenizationInput.identifier(body.tokenReference, field: "tokenReference", limit: 128)
            guard let event = TokenEventKind(rawValue: body.event) else {
                throw APIErrors.invalidRequest(
                    "event must be created, activated, suspended, resumed or deleted", field: "event")
            }
            guard let at = RFC3339.date(body.at) else {
                throw APIErrors.invalidRequest("at must be an ISO-8601 time such as 2025-03-01T12:00:00Z", field: "at")
            }
            if let reason = body.reason {
                guard ["fraud", "lost", "stolen", "other"].contains(reason) else {
                    throw APIErrors.invalidRequest("reason must be fraud, lost, stolen or other", field: "reason")
                }
            }
            try context.database.withConnection { connection in
                try connection.transaction { connection in
                    guard let token = try TokenStore.lock(body.tokenReference, connection: connection) else {
                        throw APIErrors.tokenNotFound()
                    }
                    try TokenStore.recordEvent(
                        event, tokenReference: body.tokenReference, cardID: token.cardID, source: "tsp", at: at,
                        now: now, connection: connection)
                    var details = ["event": event.rawValue, "from": token.status.rawValue, "at": body.at]
                    // A deleted token stays deleted: the event is kept as history only.
                    if token.status != .deleted, let status = event.status(after: token.status), status != token.status
                    {
                        try TokenStore.setStatus(body.tokenReference, to: status, now: now, connection: connection)
                        details["to"] = status.rawValue
                    }
                    if event == .deleted, body.reason == "fraud" {
                        details["reason"] = "fraud"
                        try OutcomeStore.recordNetworkSignal(
                            tokenReference: body.tokenReference, note: "token deleted by the token service for fraud",
                            at: at, confirmed: context.configuration.outcomes.networkConfirms, actor: "tsp", now: now,
                            connection: connection)
                    }
                    try AuditLog.append(
                        actor: "tsp", action: "token.\(event.rawValue)", subject: "token:\(body.tokenReference)",
                        details: details, at: now,
                        connection: connection)
                }
            }
            return .noContent()
        }
    }

}
