import Foundation
import IssuerdCore
import IssuerdOutbox

/// Step-up settings: one-time code lifetime and limits, message language, In-App Verification.
///
/// Read once at start-up with the rest of ``IssuerdConfiguration``; every key is documented in
/// `docs/configuration.md`.
public struct StepUpSettings: Sendable {
    /// How long a one-time code stays valid (`ISSUERD_OTP_TTL`, default 10m).
    public var codeLifetime: Duration
    /// Wrong entries before a challenge locks (`ISSUERD_OTP_MAX_ATTEMPTS`, default 5).
    public var maxAttempts: Int
    /// Codes sent per token in any hour (`ISSUERD_OTP_MAX_SENDS_PER_HOUR`, default 3).
    public var maxSendsPerHour: Int
    /// Codes sent to one customer, and to one phone number or e-mail address, in any hour, across
    /// tokens and methods (`ISSUERD_OTP_MAX_SENDS_PER_CARDHOLDER_PER_HOUR`, default 6).
    public var maxSendsPerCardholderPerHour: Int
    /// Message language when the attempt carries no device locale (`ISSUERD_NOTIFY_LOCALE`, `ko` or `en`).
    public var defaultLocale: MessageLocale
    /// Whether In-App Verification also queues the TSP activation, Apple's method B
    /// (`ISSUERD_IAV_NOTIFY_TSP`, default true).
    public var inAppVerificationNotifiesTSP: Bool
    /// In-App Verification calls per customer in any hour (`ISSUERD_IAV_MAX_PER_HOUR`, default 10).
    public var inAppVerificationsPerHour: Int

    /// Reads and validates the step-up keys.
    ///
    /// - Throws: ``ConfigurationError`` naming the first malformed key.
    init(_ reader: ConfigurationReader) throws {
        codeLifetime = try reader.duration(
            "ISSUERD_OTP_TTL", default: .seconds(600), in: .seconds(30)...(.seconds(3600)))
        maxAttempts = try reader.integer("ISSUERD_OTP_MAX_ATTEMPTS", default: 5, in: 1...20)
        maxSendsPerHour = try reader.integer("ISSUERD_OTP_MAX_SENDS_PER_HOUR", default: 3, in: 1...100)
        maxSendsPerCardholderPerHour = try reader.integer(
            "ISSUERD_OTP_MAX_SENDS_PER_CARDHOLDER_PER_HOUR", default: 6, in: 1...1_000)
        let locale = try reader.choice("ISSUERD_NOTIFY_LOCALE", default: "ko", from: ["ko", "en"])
        defaultLocale = locale == "en" ? .english : .korean
        inAppVerificationNotifiesTSP = try reader.boolean("ISSUERD_IAV_NOTIFY_TSP", default: true)
        inAppVerificationsPerHour = try reader.integer("ISSUERD_IAV_MAX_PER_HOUR", default: 10, in: 1...10_000)
    }
}
