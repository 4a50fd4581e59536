import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import Synchronization

/// Delivers one claimed message by its kind: step-up codes through the configured provider,
/// TSP notifications to `ISSUERD_TSP_WEBHOOK_URL`, Mastercard token changes to the Customer
/// Service API at `ISSUERD_MDES_CSAPI_URL`.
///
/// The code and the destination are opened from the sealed payload only here, for the
/// provider call, and never logged.
package struct OutboxDelivery: Sendable {
    package let notify: NotifySetting
    package let notifyWebhook: WebhookClient?
    /// Nil when `ISSUERD_TSP_WEBHOOK_URL` is unset: TSP messages then stay pending (visible in
    /// the backlog) and are not claimed, so nothing is lost until the URL is configured.
    package let tspWebhook: WebhookClient?
    /// Nil when `ISSUERD_MDES_CSAPI_URL` is unset: `mdes_csapi` messages then stay pending.
    package let customerService: CustomerServiceDelivery?
    package let sealer: OutboxSealer
    package let logFile: AppendOnlyFile?
    package let clock: @Sendable () -> Date

    /// The delivery for the configured providers.
    ///
    /// - Parameters:
    ///   - notify: Where one-time codes go (`ISSUERD_NOTIFY_*`).
    ///   - tspWebhookURL: `ISSUERD_TSP_WEBHOOK_URL`, if set; `tspSecret` signs its calls.
    ///   - settings: The outbox's settings (the HTTP timeout).
    ///   - customerService: Mastercard's Customer Service API, if configured.
    ///   - userAgent: The `User-Agent` of the webhook calls (``BuildInfo/userAgent``).
    package init(
        notify: NotifySetting, tspWebhookURL: URL?, tspSecret: Redacted<String>, settings: OutboxSettings,
        customerService: CustomerServiceDelivery? = nil, sealer: OutboxSealer, clock: @escaping @Sendable () -> Date,
        userAgent: String = BuildInfo.unknown.userAgent
    ) {
        self.customerService = customerService
        self.notify = notify
        switch notify {
        case .webhook(let url, let secret):
            notifyWebhook = WebhookClient(
                url: url, secret: secret.unsafeValue, timeout: settings.httpTimeout, userAgent: userAgent)
            logFile = nil
        case .log(let path):
            notifyWebhook = nil
            logFile = AppendOnlyFile(path: path)
        }
        tspWebhook = tspWebhookURL.map {
            WebhookClient(url: $0, secret: tspSecret.unsafeValue, timeout: settings.httpTimeout, userAgent: userAgent)
        }
        self.sealer = sealer
        self.clock = clock
    }

    /// The kinds this instance can deliver (TSP only with a TSP webhook URL, MDES only with the
    /// Customer Service API's URL).
    package var deliverableKinds: [OutboxKind] {
        [.notify] + (tspWebhook == nil ? [] : [.tsp]) + (customerService == nil ? [] : [.mdesCustomerService])
    }

    /// Delivers `message`.
    ///
    /// - Throws: ``OutboxError`` (safe to store as `last_error`) or ``CryptoError`` when the
    ///   sealed part does not open.
    /// - Returns: The tokens a Customer Service API `/token/update` answer listed; nil otherwise.
    @discardableResult
    package func deliver(_ message: OutboxStore.Claimed) throws -> [String]? {
        switch message.kind {
        case .notify: try deliverStepUp(message)
        case .tsp: try deliverTSP(message)
        case .mdesCustomerService:
            guard let customerService else { throw OutboxError(.rejected, "no ISSUERD_MDES_CSAPI_URL") }
            return try customerService.deliver(message)
        }
        return nil
    }

    private func deliverStepUp(_ message: OutboxStore.Claimed) throws {
        guard let payload = try? message.payload.decode(StepUpDeliveryPayload.self),
            let method = StepUpMethod(rawValue: payload.method),
            let sealedBytes = try? BinaryEncoding.decodeBase64(payload.sealed)
        else { throw OutboxError(.unreadablePayload, "step-up payload does not decode") }
        var opened = try sealer.open(
            .init(keyVersion: payload.keyVersion, bytes: sealedBytes), dedupKey: message.dedupKey)
        defer { opened.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        guard let secret = try? JSONDecoder().decode(StepUpSecret.self, from: Data(opened)) else {
            throw OutboxError(.unreadablePayload, "sealed step-up secret does not decode")
        }
        let locale = MessageLocale(rawValue: payload.locale) ?? .korean
        let text = StepUpMessage.text(
            code: secret.code, method: method, locale: locale, minutes: payload.validMinutes,
            wallet: payload.wallet ?? .applePay)
        let body: [String: String] = [
            "challengeId": payload.challengeId, "method": payload.method, "destination": secret.destination,
            "code": secret.code,
            "message": text, "expiresAt": payload.expiresAt,
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let bytes = Array(try encoder.encode(body))
        if let notifyWebhook {
            try notifyWebhook.post(bytes, idempotencyKey: message.dedupKey, now: clock())
        } else if let logFile {
            // The development provider: the destination is in clear only in this file.
            var line: [String: String] = body
            line["idempotencyKey"] = message.dedupKey
            try logFile.append(Array(try encoder.encode(line)) + [0x0A])
        }
    }

    private func deliverTSP(_ message: OutboxStore.Claimed) throws {
        guard let tspWebhook else { throw OutboxError(.rejected, "no ISSUERD_TSP_WEBHOOK_URL") }
        guard var object = try? message.payload.decode([String: JSONValue].self) else {
            throw OutboxError(.unreadablePayload, "TSP payload does not decode")
        }
        object["notificationId"] = .string(message.dedupKey)
        // What a reissue does after the notification is issuerd's, not the receiver's.
        object["resumeTokens"] = nil
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try tspWebhook.post(Array(try encoder.encode(object)), idempotencyKey: message.dedupKey, now: clock())
    }
}

/// A file lines are appended to, one writer at a time (the `log` provider).
package final class AppendOnlyFile: Sendable {
    package let path: String
    // Guarded by Mutex: serialises appends so lines never interleave.
    private let lock = Mutex(())

    package init(path: String) { self.path = path }

    /// Appends `bytes` and flushes them to the file.
    package func append(_ bytes: [UInt8]) throws {
        try lock.withLock { _ in
            let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw OutboxError(.logFile, "cannot open the notification log (errno \(errno))")
            }
            defer { close(descriptor) }
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written == bytes.count else { throw OutboxError(.logFile, "short write to the notification log") }
        }
    }
}
