/// The kinds of outbound message (the `outbox.kind` column).
package enum OutboxKind: String, Sendable, CaseIterable, Codable {
    /// A one-time code for the cardholder, through `ISSUERD_NOTIFY_PROVIDER`.
    case notify
    /// A token lifecycle notification for the TSP, through `ISSUERD_TSP_WEBHOOK_URL`.
    case tsp
    /// A call of Mastercard's Customer Service API for a token with `service = 'mdes'`, through
    /// `ISSUERD_MDES_CSAPI_URL` (``MDESCustomerServicePayload``).
    case mdesCustomerService = "mdes_csapi"
}

/// What a `notify` message stores: everything the admin view may show, plus the code and the
/// destination sealed by ``OutboxSealer`` (never in clear in the database).
package struct StepUpDeliveryPayload: Codable, Sendable, Equatable {
    package var challengeId: String
    package var tokenReference: String
    package var method: String
    package var destinationMasked: String
    /// ISO-8601.
    package var expiresAt: String
    package var locale: String
    /// Minutes the code is valid, stated in the message.
    package var validMinutes: Int
    package var keyVersion: Int
    /// Base64 of the sealed ``StepUpSecret`` JSON.
    package var sealed: String
    /// The wallet the message names; absent (messages written before it existed) is Apple Pay.
    package var wallet: StepUpMessage.Wallet?

    /// Creates the value from every stored property.
    package init(
        challengeId: String, tokenReference: String, method: String, destinationMasked: String, expiresAt: String,
        locale: String, validMinutes: Int, keyVersion: Int, sealed: String, wallet: StepUpMessage.Wallet? = nil
    ) {
        self.challengeId = challengeId
        self.tokenReference = tokenReference
        self.method = method
        self.destinationMasked = destinationMasked
        self.expiresAt = expiresAt
        self.locale = locale
        self.validMinutes = validMinutes
        self.keyVersion = keyVersion
        self.sealed = sealed
        self.wallet = wallet
    }
}

/// The sealed part of a ``StepUpDeliveryPayload``.
package struct StepUpSecret: Codable, Sendable {
    package var code: String
    package var destination: String

    /// Creates the value from every stored property.
    package init(code: String, destination: String) {
        self.code = code
        self.destination = destination
    }
}

/// What a `tsp` message stores and posts: `{"tokenReference","action","reason","cardId"}`.
/// Card status changes (admin routes) enqueue `suspend`/`delete`; step-up enqueues `activate`;
/// a reissue enqueues `delete` and `resume` with its `reissueId`.
package struct TSPNotificationPayload: Codable, Sendable, Equatable {
    package var tokenReference: String
    /// `activate`, `suspend`, `resume` or `delete`.
    package var action: String
    package var reason: String?
    package var cardId: String?
    /// The reissue this notification is part of.
    package var reissueId: String?

    /// Creates the value from every stored property.
    package init(
        tokenReference: String, action: String, reason: String? = nil, cardId: String? = nil, reissueId: String? = nil
    ) {
        self.tokenReference = tokenReference
        self.action = action
        self.reason = reason
        self.cardId = cardId
        self.reissueId = reissueId
    }
}
