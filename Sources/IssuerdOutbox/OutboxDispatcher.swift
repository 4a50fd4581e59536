import Foundation
import IssuerdCore
import IssuerdPostgres
import Synchronization

/// The background worker that empties the outbox: claim due messages, deliver, record.
///
/// One thread per instance, started by ``IssuerdApplication/start()`` and stopped (after the
/// messages in hand) by ``IssuerdApplication/shutdown(timeout:)``; each round it claims a batch
/// and delivers its lanes on up to ``OutboxSettings/concurrency`` threads of that round
/// (``dispatchOnce()``). Instances share the work through `FOR UPDATE SKIP LOCKED` (see
/// ``OutboxStore``).
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
        // Receipts are recorded by the session's thread; one not recorded (the database away)
        // is answered so that the SMS centre sends it again.
        let database = database
        let logger = logger
        delivery.sms?.start { receipts in
            do {
                try database.transaction { connection in
                    for receipt in receipts { try SMPPMessages.receipt(receipt, connection: connection) }
                }
                return true
            } catch {
                logger.warning("smpp receipt not recorded", ["error": "\(error)"])
                return false
            }
        }
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
        delivery.sms?.stop(timeout: .seconds(2))
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
    /// The batch is split into lanes (``OutboxLanes``): the messages about one card, token,
    /// reissue or challenge, in claim order. Up to ``OutboxSettings/concurrency`` lanes are
    /// delivered at the same time, each on its own thread, each message of a lane after the answer
    /// to the one before (and its outcome recorded), so one card's calls keep their order while
    /// different cards' overlap. Each message is recorded in its own transaction right after its
    /// answer: a crash leaves only the messages in flight pending, delivered again once their
    /// lease ends (at least once, never lost).
    ///
    /// A message is put on the wire only while the batch's lease still covers a whole delivery
    /// (the HTTP timeout and its one-second guard). A slow receiver would otherwise keep the
    /// dispatcher busy past the lease, another dispatcher would claim the same messages, and each
    /// would go out twice at the same moment (scripts/reliability counted those). What is left of
    /// a lane then, and whatever a stop interrupts, is released at once for the next round.
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
        guard let first = batch.first?.id else { return 0 }
        let round = Round(
            claimedAt: claimedAt, budget: settings.lease - settings.httpTimeout - .seconds(1), first: first)
        // SMS to the SMS centre go on the wire one after the other from this thread (up to its
        // window) and their answers are collected afterwards; everything else goes by lanes.
        let pipelined = batch.filter { delivery.pipelines($0) }
        let lanes = OutboxLanes.split(batch.filter { !delivery.pipelines($0) })
        let workers = min(settings.concurrency, lanes.count)
        let taken = Lock(0)
        let released = Lock<[Int64]>([])
        let done = DispatchGroup()
        if workers > 1 {
            for worker in 0..<workers {
                done.enter()
                let thread = Thread { [self] in
                    while let lane = taken.withLock({ next -> [OutboxStore.Claimed]? in
                        defer { next += 1 }
                        return next < lanes.count ? lanes[next] : nil
                    }) {
                        let left = deliver(lane: lane, round: round)
                        if !left.isEmpty { released.withLock { $0 += left } }
                    }
                    done.leave()
                }
                thread.name = "issuerd-outbox-\(worker + 1)"
                thread.start()
            }
        }
        var inFlight: [(message: OutboxStore.Claimed, begun: Result<OutboxDelivery.PendingSMS, any Error>)] = []
        for (index, message) in pipelined.enumerated() {
            if round.over(message, stopRequested: stopRequested) {
                released.withLock { $0 += pipelined[index...].map(\.id) }
                break
            }
            traced(message) { inFlight.append((message, Result { try delivery.begin(message) })) }
        }
        if workers <= 1 {
            for lane in lanes {
                let left = deliver(lane: lane, round: round)
                if !left.isEmpty { released.withLock { $0 += left } }
            }
        }
        let finished = inFlight.map { item in
            (message: item.message, outcome: Result { OutboxDelivery.Delivered(stepUp: try item.begun.get().finish()) })
        }
        recordAccepted(finished)
        done.wait()
        let left = released.withLock { $0 }
        if !left.isEmpty { release(left) }
        return batch.count
    }

    /// When a round's messages may still go on the wire.
    private struct Round: Sendable {
        var claimedAt: ContinuousClock.Instant
        var budget: Duration
        /// The round's first message, which goes whatever the time.
        var first: Int64

        /// Whether `message` must be given back untried: a stop is requested, or the lease no
        /// longer covers a whole delivery.
        func over(_ message: OutboxStore.Claimed, stopRequested: Bool) -> Bool {
            stopRequested || (message.id != first && ContinuousClock.now - claimedAt >= budget)
        }
    }

    /// Delivers one lane's messages in turn, each recorded before the next goes.
    ///
    /// - Returns: The ids of the messages given back untried (``Round/over(_:stopRequested:)``).
    private func deliver(lane: [OutboxStore.Claimed], round: Round) -> [Int64] {
        for (index, message) in lane.enumerated() {
            if round.over(message, stopRequested: stopRequested) { return lane[index...].map(\.id) }
            traced(message) { record(message, Result { try delivery.deliver(message) }) }
        }
        return []
    }

    /// Records the answers of the SMS put on the wire in one round: the accepted ones together in
    /// one transaction (one commit for the round, not one per message), then each refusal on its
    /// own. When the shared transaction fails, each is recorded on its own.
    private func recordAccepted(
        _ finished: [(message: OutboxStore.Claimed, outcome: Result<OutboxDelivery.Delivered, any Error>)]
    ) {
        let accepted = finished.compactMap { item -> (OutboxStore.Claimed, OutboxDelivery.Delivered)? in
            guard case .success(let sent) = item.outcome else { return nil }
            return (item.message, sent)
        }
        var together = false
        if accepted.count > 1 {
            do {
                try database.transaction { connection in
                    for (message, delivered) in accepted {
                        try markDelivered(message, delivered, connection: connection)
                    }
                }
                together = true
                for (message, _) in accepted {
                    deliveries.increment(labels: [message.kind.rawValue, "delivered"])
                }
            } catch {
                logger.notice("outbox round not recorded together; one at a time", ["error": "\(error)"])
            }
        }
        for item in finished {
            if together, case .success = item.outcome { continue }
            traced(item.message) { record(item.message, item.outcome) }
        }
    }

    /// A delivered message's row; for a step-up code its delivery state and SMS ids, for a
    /// Customer Service API call its reissue's progress.
    private func markDelivered(
        _ message: OutboxStore.Claimed, _ delivered: OutboxDelivery.Delivered, connection: PostgresConnection
    ) throws {
        try OutboxStore.markDelivered(message.id, connection: connection)
        try ReissueProgress.delivered(
            message, updated: delivered.updatedTokens, now: delivery.clock(), connection: connection)
        if let sent = delivered.stepUp {
            try StepUpDeliveryState.sent(sent, connection: connection)
            if !sent.segments.isEmpty { try SMPPMessages.record(sent, outboxID: message.id, connection: connection) }
        }
    }

    /// Runs `body` in the trace of the request that enqueued `message`, if it has one.
    private func traced(_ message: OutboxStore.Claimed, _ body: () -> Void) {
        if let stored = message.traceparent, let trace = TraceContext(traceparent: stored) {
            TraceContext.run(trace) { body() }
        } else {
            body()
        }
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

    /// Records what became of one delivery.
    private func record(_ message: OutboxStore.Claimed, _ outcome: Result<OutboxDelivery.Delivered, any Error>) {
        let metadata: LogMetadata = [
            "messageId": .string(String(message.id)), "kind": .string(message.kind.rawValue),
            "attempt": .int(message.attempts),
        ]
        do {
            let delivered = try outcome.get()
            try database.transaction { try markDelivered(message, delivered, connection: $0) }
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
                    // A code that will never arrive: the customer's app may offer another method.
                    if delay == nil, let target = delivery.stepUpTarget(message) {
                        try StepUpDeliveryState.undeliverable(
                            challengeID: target.challengeID, provider: target.provider, detail: summary,
                            connection: connection)
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
