import Foundation
import IssuerdHTTP
import IssuerdPostgres
import IssuerdStorage

/// Mastercard MDES, issuer side (docs/networks.md): the seven operations MDES calls, behind the
/// mutual-TLS gate, when `ISSUERD_MDES_ISSUER_KEYS` (or `ISSUERD_MDES_ISSUER_KEY_LABELS`) is set; and the analysts' view of the
/// suspicious events MDES reported.
enum MDESRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        guard let settings = context.configuration.mdes, let keys = context.mdesIssuerKeys else { return }
        let services = MDESIssuerServices(
            context: context, settings: settings, keys: keys, repeatedLogs: table.repeatedLogs)
        table.add(.post, "/mdes/issuerServices/1/0/{op}") { request in try services.handle(request) }

        table.add(.get, "/v1/admin/mdes/suspicious-events") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let token = request.query["tokenReference"]
            if let token, !(1...64).contains(token.utf8.count) {
                throw APIErrors.invalidRequest("tokenReference must be 1 to 64 characters", field: "tokenReference")
            }
            let limit = min(max(Int(request.query["limit"] ?? "") ?? 100, 1), 500)
            let rows = try context.database.withConnection {
                try MDESStore.suspiciousEvents(tokenReference: token, limit: limit, connection: $0)
            }
            return HTTPResponse(
                status: 200, headers: ["Content-Type": "application/json"],
                body: Array(#"{"events":[\#(rows.joined(separator: ","))]}"#.utf8))
        }
    }
}
