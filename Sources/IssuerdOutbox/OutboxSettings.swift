import Foundation
import IssuerdCore

/// How the outbox dispatcher claims, delivers and retries messages.
///
/// Every key is documented in `docs/configuration.md`.
public struct OutboxSettings: Sendable {
    /// Whether this instance runs a dispatcher (`ISSUERD_OUTBOX_DISPATCH`, default true); with
    /// several instances, all may run one: `FOR UPDATE SKIP LOCKED` shares the work.
    public var dispatch: Bool
    /// Tries before a message is dead-lettered (`ISSUERD_OUTBOX_MAX_ATTEMPTS`, default 10).
    public var maxAttempts: Int
    /// Delay before the first retry, doubled on each further one (`ISSUERD_OUTBOX_BACKOFF_BASE`, default 2s).
    public var backoffBase: Duration
    /// Ceiling of the retry delay (`ISSUERD_OUTBOX_BACKOFF_MAX`, default 10m).
    public var backoffMax: Duration
    /// How often an idle dispatcher looks for due messages (`ISSUERD_OUTBOX_POLL_INTERVAL`, default 1s).
    public var pollInterval: Duration
    /// How long a claimed message is reserved for its dispatcher (`ISSUERD_OUTBOX_LEASE`, default
    /// 60s). A dispatcher that dies mid-delivery leaves the message to be re-delivered when the
    /// lease ends: at least once, never lost.
    public var lease: Duration
    /// Timeout of one outbound HTTP delivery (`ISSUERD_OUTBOX_HTTP_TIMEOUT`, default 10s).
    public var httpTimeout: Duration
    /// Messages claimed per round (`ISSUERD_OUTBOX_BATCH_SIZE`, default 20).
    public var batchSize: Int
    /// Deliveries in flight at once (`ISSUERD_OUTBOX_CONCURRENCY`, default 8): a round's messages
    /// about different cards and tokens go side by side, one card's always one after the other
    /// (``OutboxLanes``).
    public var concurrency: Int

    /// Reads and validates the outbox keys.
    ///
    /// - Throws: ``ConfigurationError`` naming the first malformed key.
    package init(_ reader: ConfigurationReader) throws {
        dispatch = try reader.boolean("ISSUERD_OUTBOX_DISPATCH", default: true)
        maxAttempts = try reader.integer("ISSUERD_OUTBOX_MAX_ATTEMPTS", default: 10, in: 1...100)
        backoffBase = try reader.duration(
            "ISSUERD_OUTBOX_BACKOFF_BASE", default: .seconds(2), in: .milliseconds(10)...(.seconds(3600)))
        backoffMax = try reader.duration(
            "ISSUERD_OUTBOX_BACKOFF_MAX", default: .seconds(600), in: .milliseconds(10)...(.seconds(86400)))
        guard backoffMax >= backoffBase else {
            throw ConfigurationError(
                key: "ISSUERD_OUTBOX_BACKOFF_MAX", problem: "must not be shorter than ISSUERD_OUTBOX_BACKOFF_BASE")
        }
        pollInterval = try reader.duration(
            "ISSUERD_OUTBOX_POLL_INTERVAL", default: .seconds(1), in: .milliseconds(10)...(.seconds(60)))
        httpTimeout = try reader.duration(
            "ISSUERD_OUTBOX_HTTP_TIMEOUT", default: .seconds(10), in: .milliseconds(100)...(.seconds(300)))
        lease = try reader.duration("ISSUERD_OUTBOX_LEASE", default: .seconds(60), in: .seconds(1)...(.seconds(3600)))
        // A lease shorter than a delivery would let a second dispatcher claim a message still in flight.
        guard lease > httpTimeout else {
            throw ConfigurationError(
                key: "ISSUERD_OUTBOX_LEASE", problem: "must be longer than ISSUERD_OUTBOX_HTTP_TIMEOUT")
        }
        batchSize = try reader.integer("ISSUERD_OUTBOX_BATCH_SIZE", default: 20, in: 1...500)
        concurrency = try reader.integer("ISSUERD_OUTBOX_CONCURRENCY", default: 8, in: 1...64)
    }
}

/// Where one-time codes are delivered.
public enum NotifySetting: Sendable {
    /// One JSON line per message appended to a file (development default).
    case log(path: String)
    /// A signed POST to an SMS/voice/e-mail gateway.
    case webhook(url: URL, secret: Redacted<String>)

    package init(_ reader: ConfigurationReader) throws {
        switch try reader.choice("ISSUERD_NOTIFY_PROVIDER", default: "log", from: ["log", "webhook"]) {
        case "webhook":
            let url = try ConfigurationReader.httpURL(
                try reader.required(
                    "ISSUERD_NOTIFY_WEBHOOK_URL", hint: "required when ISSUERD_NOTIFY_PROVIDER=webhook"),
                key: "ISSUERD_NOTIFY_WEBHOOK_URL")
            let secret = try reader.required("ISSUERD_NOTIFY_WEBHOOK_SECRET", hint: "signs webhook deliveries")
            self = .webhook(url: url, secret: Redacted(secret))
        default:
            self = .log(path: reader.string("ISSUERD_NOTIFY_LOG_FILE") ?? "issuerd-notifications.jsonl")
        }
    }
}
