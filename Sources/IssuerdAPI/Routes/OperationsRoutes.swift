import Foundation
import IssuerdCore
import IssuerdHTTP

/// `/healthz`, `/readyz` and `/metrics`: unauthenticated, for load balancers and Prometheus.
/// `deploy/nginx.conf` keeps `/metrics` off the public listener.
enum OperationsRoutes {
    static func register(in table: inout RouteTable, readiness: Readiness, metrics: MetricsRegistry) {
        // On the network thread: answered while every handler thread waits for the database.
        table.add(.get, "/healthz", inline: true) { _ in
            try .json(["status": "ok"])
        }
        table.add(.get, "/readyz") { _ in
            let report = readiness.evaluate()
            return try .json(report, status: report.ready ? 200 : 503)
        }
        table.add(.get, "/metrics") { _ in
            .text(metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
    }
}

/// The component checks behind `/readyz`.
///
/// Ready means: the database answers and a ruleset is active. Other components report here too
/// (a failed rule reload, the outbox backlog) without making the instance unready, because the
/// last good ruleset keeps serving and a backlog drains by itself.
struct Readiness: Sendable {
    /// One component's verdict.
    struct Check: Codable, Sendable {
        var name: String
        var ok: Bool
        /// Whether a failure makes the whole instance unready.
        var critical: Bool
        var detail: String?
    }

    /// The `/readyz` body.
    struct Report: Codable, Sendable {
        var ready: Bool
        var status: String
        var rulesetVersion: String?
        var checks: [Check]
    }

    /// Evaluates one component; must answer quickly (the database check uses the pool's timeout).
    typealias Probe = @Sendable () -> Check

    var probes: [Probe]
    var rulesetVersion: @Sendable () -> String?

    func evaluate() -> Report {
        let checks = probes.map { $0() }
        let ready = checks.allSatisfy { $0.ok || !$0.critical }
        return Report(
            ready: ready, status: ready ? "ready" : "unavailable", rulesetVersion: rulesetVersion(), checks: checks)
    }
}
