import IssuerdCore

/// The step-up counters an operator watches: codes sent, and how entries end.
struct StepUpMetrics: Sendable {
    private let outcomes: Counter

    init(_ registry: MetricsRegistry) {
        outcomes = registry.counter(
            "issuerd_stepup_outcomes_total",
            help:
                "Step-up events by method and result (sent, verified, invalid, expired, locked, in_app_verified, app_to_app_verified).",
            labels: ["method", "result"])
    }

    /// Counts one event.
    func record(method: String, result: String) {
        outcomes.increment(labels: [method, result])
    }
}
