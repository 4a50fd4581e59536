import IssuerdHTTP

/// Routes for analysts and operators: customers, cards, card status, attempts.
enum AdminRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
    }
}
