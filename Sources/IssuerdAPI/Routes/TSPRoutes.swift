import IssuerdHTTP

/// Routes for token service providers: tokenization authorize, token events.
enum TSPRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
    }
}
