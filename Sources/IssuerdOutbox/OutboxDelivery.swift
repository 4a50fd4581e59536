import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import IssuerdSMPP
import IssuerdSMTP

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
    /// The mail relay, when e-mail is submitted by SMTP (``StepUpProviders``).
    package let smtp: SMTPClient?
    /// The SMS centre's session, when SMS is submitted by SMPP (``StepUpProviders``); the
    /// dispatcher starts and stops it.
    package let sms: SMPPSession?
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
        customerService: CustomerServiceDelivery? = nil, providers: StepUpProviders = StepUpProviders(),
        sealer: OutboxSealer, clock: @escaping @Sendable () -> Date, userAgent: String = BuildInfo.unknown.userAgent,
        logger: Logger = Logger(label: "issuerd.outbox"), metrics: MetricsRegistry? = nil
    ) {
        let unanswered = metrics?.counter(
            "issuerd_smpp_unanswered_submits_total",
            help:
                "submit_sm left unanswered by a dropped SMPP session: each may have reached the SMS centre and is sent again."
        )
        sms = providers.smpp.map {
            SMPPSession(settings: $0, logger: logger.labelled("issuerd.smpp")) { unanswered?.increment(by: Double($0)) }
        }
        self.customerService = customerService
        smtp = providers.smtp.map(SMTPClient.init)
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
    /// - Returns: For a step-up code, which provider took it and its id of the message; for a
    ///   Customer Service API `/token/update`, the tokens its answer listed.
    @discardableResult
    package func deliver(_ message: OutboxStore.Claimed) throws -> Delivered {
        switch message.kind {
        case .notify: return Delivered(stepUp: try deliverStepUp(message))
        case .tsp: try deliverTSP(message)
        case .mdesCustomerService:
            guard let customerService else { throw OutboxError(.rejected, "no ISSUERD_MDES_CSAPI_URL") }
            return Delivered(updatedTokens: try customerService.deliver(message))
        }
        return Delivered()
    }

    /// What a delivery learnt that is recorded with it.
    package struct Delivered: Sendable {
        /// For a step-up code: the provider that took it and its id of the message.
        package var stepUp: StepUpSent?
        /// For a Customer Service API `/token/update`: the tokens its answer listed.
        package var updatedTokens: [String]?

        /// Creates the value from every stored property.
        package init(stepUp: StepUpSent? = nil, updatedTokens: [String]? = nil) {
            self.stepUp = stepUp
            self.updatedTokens = updatedTokens
        }
    }

    /// The provider that delivers `method`'s codes.
    package func provider(for method: StepUpMethod) -> String {
        if method == .email, smtp != nil { return "smtp" }
        if method == .sms, sms != nil { return "smpp" }
        return notifyWebhook != nil ? "webhook" : "log"
    }

    /// The challenge a step-up message is for and the provider that delivers it, read from the
    /// part of the payload that is not sealed; nil for other kinds or an unreadable payload.
    package func stepUpTarget(_ message: OutboxStore.Claimed) -> (challengeID: UUID, provider: String)? {
        guard message.kind == .notify, let payload = try? message.payload.decode(StepUpDeliveryPayload.self),
            let challengeID = UUID(uuidString: payload.challengeId), let method = StepUpMethod(rawValue: payload.method)
        else { return nil }
        return (challengeID, provider(for: method))
    }

    /// A step-up message opened for its provider: the payload, the sealed code and destination,
    /// and the text.
    private struct OpenedStepUp {
        var payload: StepUpDeliveryPayload
        var method: StepUpMethod
        var secret: StepUpSecret
        var locale: MessageLocale
        var text: String
        var challengeID: UUID?
    }

    private func open(_ message: OutboxStore.Claimed) throws -> OpenedStepUp {
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
        return OpenedStepUp(
            payload: payload, method: method, secret: secret, locale: locale, text: text,
            challengeID: UUID(uuidString: payload.challengeId))
    }

    /// Whether `message` goes to the SMS centre: put on the wire with ``begin(_:)`` and
    /// collected with ``PendingSMS/finish()``, so several are in flight at once.
    package func pipelines(_ message: OutboxStore.Claimed) -> Bool {
        guard sms != nil, message.kind == .notify,
            let payload = try? message.payload.decode(StepUpDeliveryPayload.self)
        else { return false }
        return payload.method == StepUpMethod.sms.rawValue
    }

    /// An SMS on the wire, its answers still to come.
    package struct PendingSMS: Sendable {
        let session: SMPPSession
        let ticket: SMPPSession.Ticket
        let challengeID: UUID?

        /// Waits for the SMS centre's answers.
        ///
        /// - Throws: ``OutboxError``: a permanent refusal is a dead letter at once; no session,
        ///   a dropped one or throttling that does not end follows the backoff.
        package func finish() throws -> StepUpSent? {
            let ids: [String]
            do {
                ids = try session.finish(ticket)
            } catch {
                throw OutboxError.sms(error)
            }
            return challengeID.map {
                StepUpSent(challengeID: $0, provider: "smpp", messageID: ids.joined(separator: ","), segments: ids)
            }
        }
    }

    /// Puts an SMS step-up message on the wire (waiting while the window is full).
    package func begin(_ message: OutboxStore.Claimed) throws -> PendingSMS {
        guard let sms else { throw OutboxError(.rejected, "no SMPP session") }
        let opened = try open(message)
        guard let destination = SMSAddress.destination(opened.secret.destination) else {
            throw OutboxError(.unreadablePayload, "the phone number on file is not a number", deadLetter: true)
        }
        // The reference ties the segments together on the handset; the same for every retry.
        let segments = SMSText.segments(opened.text, reference: UInt8(truncatingIfNeeded: message.id))
        do {
            return PendingSMS(
                session: sms, ticket: try sms.send(segments, to: destination), challengeID: opened.challengeID)
        } catch {
            throw OutboxError.sms(error)
        }
    }

    private func deliverStepUp(_ message: OutboxStore.Claimed) throws -> StepUpSent? {
        if pipelines(message) { return try begin(message).finish() }
        let opened = try open(message)
        let (payload, method, secret, locale, text, challengeID) = (
            opened.payload, opened.method, opened.secret, opened.locale, opened.text, opened.challengeID
        )
        if method == .email, let smtp {
            let messageID = try sendMail(
                smtp, to: secret.destination, code: secret.code, text: text, locale: locale,
                wallet: payload.wallet ?? .applePay, key: message.dedupKey)
            return challengeID.map { StepUpSent(challengeID: $0, provider: "smtp", messageID: messageID) }
        }
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
        return challengeID.map { StepUpSent(challengeID: $0, provider: provider(for: method), messageID: nil) }
    }

    /// Submits the code's e-mail to the relay.
    ///
    /// - Returns: The relay's queue id when its answer names one, else the Message-ID.
    /// - Throws: ``OutboxError``: a 5xx is a dead letter at once, a 4xx or a transport failure
    ///   follows the backoff. The relay's reply is kept with the code and the address taken out.
    private func sendMail(
        _ smtp: SMTPClient, to address: String, code: String, text: String, locale: MessageLocale,
        wallet: StepUpMessage.Wallet, key: String
    ) throws -> String {
        guard MailAddress.isValid(address) else {
            throw OutboxError(.unreadablePayload, "the e-mail address on file is not a plain address", deadLetter: true)
        }
        let mail = MailMessage(
            from: smtp.settings.from, to: address, subject: StepUpMessage.subject(locale: locale, wallet: wallet),
            body: text, messageID: MailMessage.messageID(key: key, domain: MailAddress.domain(of: smtp.settings.from)),
            date: clock())
        do {
            let accepted = try smtp.send(mail.bytes, from: smtp.settings.from, to: address)
            return accepted.queueID ?? mail.messageID
        } catch {
            // A relay may quote the recipient (or, in theory, the text) in its reply.
            let reply = error.description.replacingOccurrences(of: address, with: "[address]")
                .replacingOccurrences(of: code, with: "[code]")
            switch error.kind {
            case .permanent: throw OutboxError(.rejected, reply, deadLetter: true)
            case .transient: throw OutboxError(.rejected, reply)
            case .transport: throw OutboxError(.transport, "SMTP: \(reply)")
            }
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
    // Guarded by Lock: serialises appends so lines never interleave.
    private let lock = Lock(())

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
