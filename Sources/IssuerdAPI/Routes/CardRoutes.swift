import IssuerdHTTP

/// Routes for the issuer app: GET /v1/cards, POST /v1/cards/{cardId}/apple-pay/provision.
enum CardRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
    }
}
