import IssuerdSMPP

/// A failure inside the outbox machinery. `description` is safe to log and to store as a
/// message's `last_error`: it never holds a code, a destination or a secret.
package struct OutboxError: Error, CustomStringConvertible, Sendable {
    /// A stable identifier of the failure, open for new values.
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// A payload that does not decode or open.
        package static let unreadablePayload = Code(rawValue: "unreadable_payload")
        /// The receiver could not be reached or timed out.
        package static let transport = Code(rawValue: "transport")
        /// The receiver answered with a non-2xx status.
        package static let rejected = Code(rawValue: "rejected")
        /// The `log` provider could not append to its file.
        package static let logFile = Code(rawValue: "log_file")
        /// Mastercard's Customer Service API refused the call (its errors are in ``mastercard``).
        package static let mastercardRefused = Code(rawValue: "mastercard_refused")
    }

    package let code: Code
    package let message: String
    /// True when trying again cannot succeed: the message becomes a dead letter at once instead
    /// of after `ISSUERD_OUTBOX_MAX_ATTEMPTS` tries.
    package let deadLetter: Bool
    /// Mastercard's answer, recorded in `mdes_csapi_errors` beside the outcome.
    package let mastercard: MastercardRefusal?
    package let file: String
    package let line: Int

    package init(
        _ code: Code, _ message: String, deadLetter: Bool = false, mastercard: MastercardRefusal? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.deadLetter = deadLetter
        self.mastercard = mastercard
        self.file = file
        self.line = line
    }

    package var description: String { "\(code): \(message)" }
}

extension OutboxError {
    /// An SMPP failure as the outbox keeps it: a permanent refusal is a dead letter at once.
    static func sms(_ failure: SMPPSession.Failure) -> OutboxError {
        switch failure {
        case .unavailable: OutboxError(.transport, failure.description)
        case .refused(_, let permanent): OutboxError(.rejected, failure.description, deadLetter: permanent)
        }
    }
}
