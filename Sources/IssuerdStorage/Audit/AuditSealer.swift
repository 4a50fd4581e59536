import Foundation
import IssuerdCore
import IssuerdPostgres
import Synchronization

/// The background worker that chains committed audit entries (``AuditLog/seal(connection:wait:limit:)``).
///
/// One thread per instance, started by ``IssuerdApplication/start()`` and stopped (after the
/// round in hand) by ``IssuerdApplication/shutdown(timeout:)``. Instances share the work through
/// the audit advisory lock: a round that finds it taken leaves the work to its holder.
package final class AuditSealer: Sendable {
    private let database: PostgresPool
    private let interval: Duration
    private let logger: Logger
    private let sealedTotal: Counter
    private let thread = BackgroundThread(name: "issuerd-audit-sealer")

    package init(database: PostgresPool, settings: AuditSettings, metrics: MetricsRegistry, logger: Logger) {
        self.database = database
        self.interval = settings.sealInterval
        self.logger = logger
        sealedTotal = metrics.counter(
            "issuerd_audit_sealed_total", help: "Audit entries chained by this instance's sealer.", labels: [])
        metrics.gauge("issuerd_audit_unsealed", help: "Committed audit entries not chained yet.", labels: []) {
            // Read at scrape time; a database outage simply leaves the gauge empty.
            guard let unsealed = try? database.withConnection({ try AuditLog.unsealed(connection: $0) }) else {
                return []
            }
            return [([], Double(unsealed.count))]
        }
        metrics.gauge(
            "issuerd_audit_unsealed_oldest_age_seconds",
            help: "Seconds the oldest committed audit entry has waited to be chained (0 when none waits)."
        ) {
            guard let unsealed = try? database.withConnection({ try AuditLog.unsealed(connection: $0) }) else {
                return []
            }
            let now = Date().timeIntervalSince1970 * 1000
            return [([], unsealed.oldestMilliseconds.map { max(0, (now - Double($0)) / 1000) } ?? 0)]
        }
    }

    /// Starts the worker thread (once).
    package func start() {
        thread.start { [self] in run() }
    }

    /// Seals what is pending one last time, then waits for the thread, at most `timeout`.
    package func stop(timeout: Duration) {
        if !thread.stop(timeout: timeout) {
            logger.warning("audit sealer still sealing at shutdown; the next sealer chains what is left")
        }
    }

    private var stopRequested: Bool { thread.stopRequested }

    private func run() {
        logger.info("audit sealer started", ["intervalMs": .int(Int(interval.timeInterval * 1000))])
        while true {
            // One more round after a stop request: what this instance's last requests wrote is
            // chained before the pool closes (another instance or `audit verify` would otherwise).
            let stopping = stopRequested
            let sealed = sealOnce()
            if stopping { break }
            // After a failure (database away), wait at least 5 s: one warning, not four a second.
            thread.sleep(seconds: sealed ? interval.timeInterval : max(interval.timeInterval, 5))
        }
        logger.info("audit sealer stopped")
    }

    /// One round; false when it failed.
    private func sealOnce() -> Bool {
        do {
            let sealed = try database.withConnection { try AuditLog.seal(connection: $0, wait: false) }
            if sealed > 0 { sealedTotal.increment(by: Double(sealed), labels: []) }
            return true
        } catch {
            logger.warning("audit seal round failed", ["error": "\(error)"])
            return false
        }
    }
}
