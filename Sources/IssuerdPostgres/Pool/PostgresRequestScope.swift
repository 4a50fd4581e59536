import Foundation
import IssuerdCore

/// The database work of one request, so that its waits add up to a bound rather than each
/// getting a bound of its own.
///
/// A request that has already waited (for a thread to run it, behind requests that waited for
/// the database) has that much less time to wait for a connection (``PostgresPool``'s acquire
/// timeout); and once one of its statements was abandoned (``PostgresError/Code/timedOut``), or
/// a connection attempt ran out of time, none of its further database work waits at all: the
/// clean-up after a failure would otherwise wait out a second deadline against the same
/// silent server. Work outside a scope (background threads, commands) is unaffected.
///
/// The scope lives in the running thread's storage, for the length of ``run(waited:_:)``.
public final class PostgresRequestScope {
    /// How long the request waited before its work began.
    public let waited: Duration
    /// Set when a statement of this request got no answer in time, or a connection attempt for
    /// it ran out of time.
    public internal(set) var gaveUp = false

    private init(waited: Duration) {
        self.waited = max(.zero, waited)
    }

    private static let slot = ThreadLocal<PostgresRequestScope>()

    /// The scope of the work running on this thread, if any.
    public static var current: PostgresRequestScope? { slot.value }

    /// Runs `body` as one request's database work on this thread.
    ///
    /// - Parameter waited: How long the request had waited before `body` began.
    public static func run<T>(waited: Duration, _ body: () throws -> T) rethrows -> T {
        try slot.withValue(PostgresRequestScope(waited: waited), body)
    }
}
