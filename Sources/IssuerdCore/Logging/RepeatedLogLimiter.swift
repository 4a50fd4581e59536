import Synchronization

/// One log line per kind per interval for errors that every request repeats (a full database
/// disk fails each request the same way): the first of a kind is logged at once, the rest of its
/// interval are counted, and the next one after the interval is logged with that count.
///
/// `Sendable`: its only state is behind a `Lock`.
public final class RepeatedLogLimiter: Sendable {
    /// How long a kind stays quiet after a line of it was logged.
    public let interval: Duration
    // Guarded by Lock: per kind, when its last line was logged and how many were left out since.
    private let kinds = Lock([String: (loggedAt: ContinuousClock.Instant, suppressed: Int)]())

    /// Creates a limiter.
    ///
    /// - Parameter interval: At most one line per kind in any such interval.
    public init(interval: Duration) {
        self.interval = interval
    }

    /// Whether to log a line of `kind` now.
    ///
    /// - Returns: nil to leave it out (it is counted); otherwise how many of its kind were left
    ///   out since the last line logged, for the line to say.
    public func admit(_ kind: String, now: ContinuousClock.Instant = .now) -> Int? {
        kinds.withLock { kinds in
            if let last = kinds[kind], now - last.loggedAt < interval {
                kinds[kind] = (last.loggedAt, last.suppressed + 1)
                return nil
            }
            let suppressed = kinds[kind]?.suppressed ?? 0
            kinds[kind] = (now, 0)
            return suppressed
        }
    }

    /// Logs `message` at warning level unless a line of `kind` was logged within the interval;
    /// a line logged after some were left out carries `repeated` with their count.
    public func warning(_ logger: Logger, kind: String, _ message: String, _ metadata: LogMetadata = [:]) {
        guard let suppressed = admit(kind) else { return }
        var metadata = metadata
        if suppressed > 0 { metadata["repeated"] = .int(suppressed) }
        logger.warning(message, metadata)
    }
}
