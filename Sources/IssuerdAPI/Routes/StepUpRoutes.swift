import IssuerdHTTP

/// Routes for step-up: activation codes, verify, In-App Verification, outbox administration.
enum StepUpRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
    }
}
