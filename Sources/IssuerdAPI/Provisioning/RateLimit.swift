import Foundation
import IssuerdCore

/// A sliding-window limit, written `COUNT/WINDOW` (`10/1m`, `100/1h`) in configuration.
///
/// Provisioning counts its windows in PostgreSQL (`provisioning_attempts`), not in memory, so
/// a limit holds across every instance behind the load balancer.
public struct RateLimit: Sendable, Equatable, CustomStringConvertible {
    /// Requests allowed per window.
    public var count: Int
    /// The window length in seconds.
    public var window: TimeInterval

    /// A limit of `count` requests per `window` seconds.
    public init(count: Int, window: TimeInterval) {
        self.count = count
        self.window = window
    }

    /// Parses `COUNT/WINDOW`, e.g. `10/1m`; nil when malformed or out of bounds
    /// (1 to 1,000,000 requests, 1 s to 1 d).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard parts.count == 2, let count = Int(parts[0]), (1...1_000_000).contains(count),
            let duration = ConfigurationReader.parseDuration(String(parts[1]))
        else { return nil }
        let seconds = duration.timeInterval
        guard (1...86_400).contains(seconds) else { return nil }
        self.init(count: count, window: seconds)
    }

    public var description: String { "\(count)/\(Int(window))s" }
}

extension ConfigurationReader {
    /// A ``RateLimit`` written `COUNT/WINDOW`, or `defaultValue` when unset.
    func rateLimit(_ key: String, default defaultValue: RateLimit) throws -> RateLimit {
        guard let text = string(key) else { return defaultValue }
        guard let limit = RateLimit(text) else {
            throw ConfigurationError(
                key: key, problem: "must be COUNT/WINDOW such as 10/1m (1 to 1000000 requests, window 1s to 1d)")
        }
        return limit
    }
}
