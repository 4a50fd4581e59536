import IssuerdAuth
import IssuerdHTTP
import IssuerdOutbox
import IssuerdWire

/// Routes for step-up: activation codes, verify, In-App Verification, outbox administration.
enum StepUpRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        let metrics = StepUpMetrics(context.metrics)
        let sealer = OutboxSealer(keyRing: context.vault.keyRing)
        let settings = context.configuration.stepUp
        let issuer = ChallengeIssuer(
            database: context.database, vault: context.vault, sealer: sealer, settings: settings, metrics: metrics)
        let verifier = ChallengeVerifier(database: context.database, vault: context.vault, metrics: metrics)
        let wallet = WalletVerifier(
            database: context.database, vault: context.vault, crypto: context.crypto, settings: settings,
            metrics: metrics)

        table.add(.post, "/v1/tsp/activation-codes") { request in
            try context.tsp.authenticate(request, database: context.database, now: context.now)
            return try context.idempotency.run(request, scope: "tsp:activation-codes") { claim in
                let body = try request.decodeJSON(ActivationCodeRequest.self)
                return try ChallengeIssuer.answer(try issuer.issue(body, now: context.now, claim: claim))
            }
        }

        table.add(.post, "/v1/tsp/activation-codes/verify") { request in
            // The TSP signs its calls; an IVR system (ARS codes) presents an API key instead.
            let caller: ChallengeVerifier.Caller
            if request.headers[TSPAuthenticator.headerName] != nil {
                try context.tsp.authenticate(request, database: context.database, now: context.now)
                caller = .tsp
            } else {
                caller = .ivr(auditActor: try context.apiKeys.authenticate(request, roles: [.ivr]).auditActor)
            }
            let body = try request.decodeJSON(ActivationCodeVerifyRequest.self)
            return try .json(try verifier.verify(body, caller: caller, now: context.now))
        }

        table.add(.post, "/v1/wallet/verifications") { request in
            let customerID = try context.appTokens.customerID(for: request, now: context.now)
            let body = try request.decodeJSON(WalletVerificationRequest.self)
            return try .json(try wallet.verify(body, customerID: customerID, now: context.now))
        }

        table.add(.get, "/v1/admin/outbox") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin])
            let kind = try AnalystRoutes.choice(
                request.query["kind"], field: "kind", from: OutboxKind.allCases.map(\.rawValue)
            ).flatMap(OutboxKind.init(rawValue:))
            let status = try context.database.withConnection {
                try OutboxAdministration.status(now: context.now, kind: kind, connection: $0)
            }
            return try .json(status)
        }

        table.add(.post, "/v1/admin/outbox/{messageId}/requeue") { request in
            let principal = try context.apiKeys.authenticate(request, roles: [.admin])
            let messageID = request.pathParameters["messageId"] ?? ""
            let view = try context.database.transaction { connection in
                try OutboxAdministration.requeue(
                    messageID, actor: principal.auditActor, now: context.now, connection: connection)
            }
            return try .json(view)
        }
    }
}
