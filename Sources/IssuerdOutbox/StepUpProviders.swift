import Foundation
import IssuerdCore
import IssuerdSMPP
import IssuerdSMTP

/// The methods that have a provider of their own: e-mail by SMTP (`ISSUERD_EMAIL_PROVIDER=smtp`)
/// and SMS by SMPP (`ISSUERD_SMS_PROVIDER=smpp`).
/// A method without one goes through ``NotifySetting`` (the webhook or the log file); ARS
/// always does.
public struct StepUpProviders: Sendable {
    /// The mail relay, when e-mail is submitted by SMTP.
    package var smtp: SMTPSettings?
    /// The SMS centre, when SMS is submitted by SMPP.
    package var smpp: SMPPSettings?

    /// Creates the value from every stored property.
    package init(smtp: SMTPSettings? = nil, smpp: SMPPSettings? = nil) {
        self.smtp = smtp
        self.smpp = smpp
    }

    /// Reads `ISSUERD_EMAIL_PROVIDER` (`notify`, the default, or `smtp`) and the settings of the
    /// chosen provider; `timeout` bounds one submission (``OutboxSettings/httpTimeout``).
    ///
    /// - Throws: ``ConfigurationError`` naming the first missing or malformed key.
    package init(_ reader: ConfigurationReader, timeout: Duration) throws {
        switch try reader.choice("ISSUERD_EMAIL_PROVIDER", default: "notify", from: ["notify", "smtp"]) {
        case "smtp": smtp = try SMTPSettings(reader, timeout: timeout)
        default: smtp = nil
        }
        switch try reader.choice("ISSUERD_SMS_PROVIDER", default: "notify", from: ["notify", "smpp"]) {
        case "smpp": smpp = try SMPPSettings(reader, timeout: timeout)
        default: smpp = nil
        }
    }
}

/// What a provider said when it took a step-up message: recorded on the challenge as `sent`.
package struct StepUpSent: Sendable, Equatable {
    /// The challenge the message carries the code of.
    package var challengeID: UUID
    /// `smtp`, `smpp`, `webhook` or `log`.
    package var provider: String
    /// The provider's own id of the message (the relay's queue id, else the Message-ID; the SMS
    /// centre's ids of its segments, comma-separated), if any.
    package var messageID: String?
    /// The SMS centre's id of each segment, in order (SMPP only): receipts name them.
    package var segments: [String] = []
}
