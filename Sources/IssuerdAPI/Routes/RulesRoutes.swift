import IssuerdHTTP

/// Routes for the rules: GET /v1/admin/rules, reload, backtest.
enum RulesRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
    }
}
