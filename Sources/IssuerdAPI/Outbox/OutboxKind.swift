/// The two kinds of outbound message (the `outbox.kind` column).
enum OutboxKind: String, Sendable, CaseIterable, Codable {
    /// A one-time code for the cardholder, through `ISSUERD_NOTIFY_PROVIDER`.
    case notify
    /// A token lifecycle notification for the TSP, through `ISSUERD_TSP_WEBHOOK_URL`.
    case tsp
}

/// What a `notify` message stores: everything the admin view may show, plus the code and the
/// destination sealed by ``OutboxSealer`` (never in clear in the database).
struct StepUpDeliveryPayload: Codable, Sendable, Equatable {
    var challengeId: String
    var tokenReference: String
    var method: String
    var destinationMasked: String
    /// ISO-8601.
    var expiresAt: String
    var locale: String
    /// Minutes the code is valid, stated in the message.
    var validMinutes: Int
    var keyVersion: Int
    /// Base64 of the sealed ``StepUpSecret`` JSON.
    var sealed: String
}

/// The sealed part of a ``StepUpDeliveryPayload``.
struct StepUpSecret: Codable, Sendable {
    var code: String
    var destination: String
}

/// What a `tsp` message stores and posts: `{"tokenReference","action","reason","cardId"}`.
/// Card status changes (admin routes) enqueue `suspend`/`delete`; step-up enqueues `activate`.
struct TSPNotificationPayload: Codable, Sendable, Equatable {
    var tokenReference: String
    /// `activate`, `suspend`, `resume` or `delete`.
    var action: String
    var reason: String?
    var cardId: String?
}
