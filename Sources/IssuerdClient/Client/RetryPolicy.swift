/// When and how often ``IssuerdClient`` tries a failed attempt again.
///
/// Only attempts that cannot duplicate an effect are retried: `GET`s, and `POST`s that carry the
/// call's `Idempotency-Key` (issuerd answers a replayed key with the stored response). Only
/// transport failures and 502/503/504 are retried: a 4xx will not change by asking again, and a
/// 429 is the server asking the app to slow down. Every wait must fit in the call's time budget.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts per call, the first included (1 disables retries); clamped to 1...10.
    public let maxAttempts: Int
    /// The wait before the first retry; doubled before each further one.
    public let initialBackoff: Duration
    /// The longest wait between attempts, `Retry-After` included.
    public let maxBackoff: Duration

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - maxAttempts: Attempts per call, the first included; clamped to 1...10.
    ///   - initialBackoff: The wait before the first retry.
    ///   - maxBackoff: The longest wait between attempts.
    public init(maxAttempts: Int = 3, initialBackoff: Duration = .milliseconds(100), maxBackoff: Duration = .seconds(2))
    {
        self.maxAttempts = min(max(maxAttempts, 1), 10)
        self.initialBackoff = max(initialBackoff, .zero)
        self.maxBackoff = max(maxBackoff, self.initialBackoff)
    }

    /// One attempt per call.
    public static let never = RetryPolicy(maxAttempts: 1)

    /// Whether an HTTP status is worth another attempt: the gateway or the database was briefly
    /// unavailable (issuerd answers 503 when PostgreSQL is down).
    static func isRetryable(status: Int) -> Bool {
        status == 502 || status == 503 || status == 504
    }

    /// The wait after a failed attempt.
    ///
    /// - Parameters:
    ///   - attempt: The attempt that just failed, from 1.
    ///   - retryAfter: The server's `Retry-After`, if it sent one.
    /// - Returns: Exponential back-off with jitter (so clients that failed together do not come
    ///   back together), at least `retryAfter`, at most ``maxBackoff``.
    func backoff(afterAttempt attempt: Int, retryAfter: Duration?) -> Duration {
        var wait = initialBackoff
        for _ in 1..<max(attempt, 1) where wait < maxBackoff { wait *= 2 }
        wait = wait * Double.random(in: 0.5...1.0)
        if let retryAfter { wait = max(wait, retryAfter) }
        return min(wait, maxBackoff)
    }
}
