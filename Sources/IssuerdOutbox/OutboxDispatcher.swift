import Foundation
import IssuerdCore
import IssuerdPostgres
import Synchronization

/// The background worker that empties the outbox: claim due messages, deliver, record.
///
/// One thread per instance, started by ``IssuerdApplication/start()`` and stopped (after the
/// message in hand) by ``IssuerdApplication/shutdown(timeout:)``. Instances share the work
/// through `FOR UPDATE SKIP LOCKED` (see ``OutboxStore``).
package final class OutboxDispatcher: Sendable {
    private let database: PostgresPool
    private let settings: OutboxSettings
    private let delivery: OutboxDelivery
    private let backoff: OutboxBackoff
    private let logger: Logger
    private let deliveries: Counter
    private let thread = BackgroundThread(name: "issuerd-outbox")

    package init(
        database: PostgresPool, settings: OutboxSettings, delivery: OutboxDelivery, metrics: MetricsRegistry,
        logger: Logger
    ) {
        self.database = database
        self.settings = settings
        self.delivery = delivery
        self.backoff = OutboxBackoff(
            base: settings.backoffBase, maximum: settings.backoffMax, maxAttempts: settings.maxAttempts)
        self.logger = logger
        deliveries = metrics.counter(
            "issuerd_outbox_deliveries_total",
            help: "Outbox delivery tries by kind and result (delivered, retry, dead).",
            labels: ["kind", "result"])
        // Every series from the first scrape, at 0 until something happens: an alert on a rate
        // or an absence needs the series to exist.
        for kind in OutboxKind.allCases {
            for result in ["delivered", "retry", "dead"] { deliveries.initialize(labels: [kind.rawValue, result]) }
        }
        metrics.gauge(
            "issuerd_outbox_backlog", help: "Outbox messages by kind and status.", labels: ["kind", "status"]
        ) {
            // Read at scrape time; a database outage simply leaves the gauge empty.
            guard let counts = try? database.withConnection({ try OutboxStore.counts(connection: $0) }) else {
                return []
            }
            var samples: [[String]: Double] = [:]
            for kind in OutboxKind.allCases {
                for status in ["pending", "delivered", "dead"] { samples[[kind.rawValue, status]] = 0 }
            }
            for count in counts { samples[[count.kind, count.status]] = Double(count.count) }
            return samples.map { ($0.key, $0.value) }
        }
        metrics.gauge(
            "issuerd_outbox_oldest_age_seconds",
            help: "Seconds the oldest pending outbox message of each kind has waited (0 when none waits).",
            labels: ["kind"]
        ) {
            guard let ages = try? database.withConnection({ try OutboxStore.oldestPendingAges(connection: $0) })
            else { return [] }
            var samples = Dictionary(uniqueKeysWithValues: OutboxKind.allCases.map { ($0.rawValue, 0.0) })
            for age in ages { samples[age.kind] = max(0, age.seconds) }
            return samples.map { ([$0.key], $0.value) }
        }
    }

    /// Starts the worker thread (once).
    package func start() {
        guard thread.start({ [self] in run() }) else { return }
        if !delivery.deliverableKinds.contains(.tsp) {
            logger.warning(
                "ISSUERD_TSP_WEBHOOK_URL is not set: TSP notifications stay pending in the outbox until it is")
        }
        if !delivery.deliverableKinds.contains(.mdesCustomerService) {
            logger.info(
                "ISSUERD_MDES_CSAPI_URL is not set: Mastercard token changes stay pending in the outbox until it is")
        }
    }

    /// Stops after the message in hand and waits for the thread, at most `timeout`.
    package func stop(timeout: Duration) {
        if !thread.stop(timeout: timeout) {
            logger.warning("outbox dispatcher still delivering at shutdown; its claims will expire and be retried")
        }
    }

    private var stopRequested: Bool { thread.stopRequested }

    private func run() {
        logger.info(
            "outbox dispatcher started",
            ["kinds": .string(delivery.deliverableKinds.map(\.rawValue).joined(separator: ","))])
        while !stopRequested {
            var claimedFullBatch = false
            do {
                claimedFullBatch = try dispatchOnce() == settings.batchSize
            } catch {
                logger.warning("outbox round failed", ["error": "\(error)"])
            }
            if claimedFullBatch { continue }
            thread.sleep(seconds: settings.pollInterval.timeInterval)
        }
        logger.info("outbox dispatcher stopped")
    }

    /// Claims one batch and delivers it.
    ///
    /// Messages are delivered one after the other while the batch's lease still covers a whole
    /// delivery (the HTTP timeout and its one-second guard). A slow receiver would otherwise keep
    /// the dispatcher busy past the lease, another dispatcher would claim the same messages, and
    /// each would go out twice at the same moment (scripts/reliability counted those). The rest
    /// of the batch, and whatever a stop interrupts, is released at once for the next round.
    ///
    /// - Returns: The number of messages claimed.
    @discardableResult
    package func dispatchOnce() throws -> Int {
        let claimedAt = ContinuousClock.now
        let batch = try database.transaction { connection in
            try OutboxStore.claim(
                limit: settings.batchSize, lease: settings.lease, kinds: delivery.deliverableKinds,
                connection: connection)
        }
        let budget = settings.lease - settings.httpTimeout - .seconds(1)
        for (index, message) in batch.enumerated() {
            if stopRequested || (index > 0 && ContinuousClock.now - claimedAt >= budget) {
                release(batch[index...].map(\.id))
                break
            }
            // A message enqueued by a request is delivered as part of that request's trace.
            if let stored = message.traceparent, let trace = TraceContext(traceparent: stored) {
                TraceContext.run(trace) { deliver(message) }
            } else {
                deliver(message)
            }
        }
        return batch.count
    }

    private func release(_ ids: [Int64]) {
        do {
            try database.withConnection { try OutboxStore.release(ids, connection: $0) }
            logger.debug("outbox claims released", ["count": .int(ids.count)])
        } catch {
            // The lease ends by itself; the messages are delivered then.
            logger.warning("outbox claims not released", ["count": .int(ids.count), "error": "\(error)"])
        }
    }

    private func deliver(_ message: OutboxStore.Claimed) {
        let metadata: LogMetadata = [
            "messageId": .string(String(message.id)), "kind": .string(message.kind.rawValue),
            "attempt": .int(message.attempts),
        ]
        do {
            let updated = try delivery.deliver(message)
            try database.transaction { connection in
                try OutboxStore.markDelivered(message.id, connection: connection)
                try ReissueProgress.delivered(message, updated: updated, now: delivery.clock(), connection: connection)
            }
            deliveries.increment(labels: [message.kind.rawValue, "delivered"])
            logger.debug("outbox message delivered", metadata)
        } catch {
            let outboxError = error as? OutboxError
            let summary = outboxError?.description ?? "delivery failed (\(type(of: error)))"
            // A refusal that says trying again cannot help is dead at once (Mastercard's
            // `Recoverable: "false"`); everything else follows the backoff.
            let decision =
                outboxError?.deadLetter == true ? .deadLetter : backoff.decision(afterAttempt: message.attempts)
            let delay: Double?
            if case .retry(let after) = decision { delay = after } else { delay = nil }
            do {
                try database.transaction { connection in
                    try OutboxStore.markFailed(message.id, error: summary, retryAfter: delay, connection: connection)
                    try outboxError?.mastercard?.record(
                        outboxID: message.id, attempt: message.attempts, connection: connection)
                    if delay == nil {
                        try ReissueProgress.deadLettered(
                            message, error: summary, now: delivery.clock(), connection: connection)
                    }
                }
            } catch {
                // The lease ends by itself; the message is retried then.
                logger.warning("outbox outcome not recorded", metadata.merging(["error": "\(error)"]) { $1 })
            }
            deliveries.increment(labels: [message.kind.rawValue, delay == nil ? "dead" : "retry"])
            // A dead letter is a code or a token change that will never arrive: warning, so it
            // shows where notices are filtered out.
            logger.log(
                delay == nil ? .warning : .notice,
                delay == nil ? "outbox message dead-lettered" : "outbox delivery failed",
                metadata.merging(["error": .string(summary)]) { $1 })
        }
    }
}
