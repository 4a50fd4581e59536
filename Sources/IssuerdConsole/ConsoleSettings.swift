import Foundation
import IssuerdCore
import IssuerdHistory

/// The analyst console's sessions (`ISSUERD_CONSOLE_*`, docs/console.md).
public struct ConsoleSettings: Sendable {
    /// When a cookie is marked `Secure`.
    public enum SecureCookies: String, Sendable {
        /// When the request came over TLS as the proxy tells (`X-Forwarded-Proto: https`, set by
        /// deploy/nginx.conf); issuerd itself speaks plain HTTP behind it.
        case auto
        /// Always (production behind a TLS-terminating proxy that does not send the header).
        case always
        /// Never (plain-HTTP development on loopback).
        case never
    }

    /// How long a session lasts after sign-in (`ISSUERD_CONSOLE_SESSION_TTL`, default 8h):
    /// an absolute limit kept in PostgreSQL, not renewed by use.
    public var sessionLifetime: Duration
    /// `ISSUERD_CONSOLE_SECURE_COOKIES` (`auto`, `always`, `never`; default `auto`).
    public var secureCookies: SecureCookies
    /// The most stored attempts a backtest keeps parsed in memory between runs
    /// (`ISSUERD_BACKTEST_CACHE_ATTEMPTS`, default 200,000; 0 keeps none): ``BacktestWindowCache``.
    public var backtestCacheAttempts: Int
    /// How many of the most recent hours the server keeps parsed on its own, read at start and
    /// each time another hour is complete (`ISSUERD_BACKTEST_KEEP_RECENT_HOURS`, default 24; 0 reads
    /// only what backtests and the Backtest page's read-ahead ask for): ``BacktestPreparation``.
    public var backtestKeepRecentHours: Int
    /// The IANA time zone console pages show times in, with their offset
    /// (`ISSUERD_CONSOLE_TIME_ZONE`, default `UTC`); the API itself always answers in UTC.
    public var timeZone: String

    /// Reads and validates the console keys.
    ///
    /// - Throws: ``ConfigurationError`` naming the first malformed key.
    package init(_ reader: ConfigurationReader) throws {
        sessionLifetime = try reader.duration(
            "ISSUERD_CONSOLE_SESSION_TTL", default: .seconds(8 * 3600), in: .seconds(60)...(.seconds(86400)))
        let choice = try reader.choice(
            "ISSUERD_CONSOLE_SECURE_COOKIES", default: "auto", from: ["auto", "always", "never"])
        secureCookies = SecureCookies(rawValue: choice) ?? .auto
        backtestCacheAttempts = try reader.integer(
            "ISSUERD_BACKTEST_CACHE_ATTEMPTS", default: 200_000, in: 0...10_000_000)
        backtestKeepRecentHours = try reader.integer(
            "ISSUERD_BACKTEST_KEEP_RECENT_HOURS", default: 24, in: 0...BacktestWindowCache.maximumHours)
        timeZone = reader.string("ISSUERD_CONSOLE_TIME_ZONE") ?? "UTC"
        // An IANA name (Asia/Seoul, Europe/London), as the browser's Intl reads it: not an
        // abbreviation (KST), which Foundation would take and a browser would not.
        guard timeZone.contains("/") || timeZone == "UTC", TimeZone(identifier: timeZone) != nil else {
            throw ConfigurationError(
                key: "ISSUERD_CONSOLE_TIME_ZONE", problem: "must be an IANA time zone such as UTC or Asia/Seoul")
        }
    }
}
