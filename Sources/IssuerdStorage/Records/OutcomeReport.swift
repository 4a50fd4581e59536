import Foundation
import IssuerdCore
import IssuerdRisk

/// One report of what became of a decision, validated: which attempt (directly or through the
/// token it created), fraud or legitimate, who says so, when, and what was lost.
///
/// The API's items and the CSV import's lines both become this, through
/// ``validate(_:now:)``, so both refuse the same input with the same words.
package struct OutcomeReport: Sendable, Equatable {
    /// Fraud or legitimate.
    package enum Label: String, Sendable, CaseIterable {
        case fraud, legitimate
    }

    /// Who reported it.
    package enum Source: String, Sendable, CaseIterable {
        case analyst, cardholder, chargeback, network
    }

    /// The attempt itself, or the token whose creating attempt it is about.
    package enum Subject: Sendable, Equatable {
        case attempt(UUID)
        case token(String)
    }

    package var subject: Subject
    package var label: Label
    package var source: Source
    /// False only for a network signal that the settings do not count as confirmed fraud.
    package var confirmed: Bool
    /// When the report was made; nil means "now" for a new report, and any time for matching
    /// one already kept (so re-posting a report without a time records nothing new).
    package var reportedAt: Date?
    /// Minor units of `currency`.
    package var amountLost: Int64?
    package var currency: String?
    package var note: String

    /// The currencies an amount lost may be in.
    package static let currencies = ["KRW"]
    /// The longest note kept.
    package static let noteLimit = 1000

    package init(
        subject: Subject, label: Label, source: Source, confirmed: Bool = true, reportedAt: Date?,
        amountLost: Int64? = nil, currency: String? = nil, note: String = ""
    ) {
        self.subject = subject
        self.label = label
        self.source = source
        self.confirmed = confirmed
        self.reportedAt = reportedAt
        self.amountLost = amountLost
        self.currency = currency
        self.note = note
    }

    /// A report's fields as text, before validation (an API item or a CSV line).
    package struct Fields: Sendable {
        package var attemptID: String?
        package var tokenReference: String?
        package var outcome: String?
        package var source: String?
        package var reportedAt: String?
        package var amountLost: String?
        package var currency: String?
        package var note: String?

        package init(
            attemptID: String? = nil, tokenReference: String? = nil, outcome: String? = nil, source: String? = nil,
            reportedAt: String? = nil, amountLost: String? = nil, currency: String? = nil, note: String? = nil
        ) {
            self.attemptID = attemptID
            self.tokenReference = tokenReference
            self.outcome = outcome
            self.source = source
            self.reportedAt = reportedAt
            self.amountLost = amountLost
            self.currency = currency
            self.note = note
        }
    }

    /// Validates one report's fields (an empty text counts as absent).
    ///
    /// - Returns: The report, or the first thing wrong with it (code `invalid_outcome`).
    package static func validate(_ fields: Fields, now: Date) -> Result<OutcomeReport, OutcomeInputError> {
        func present(_ text: String?) -> String? { text.flatMap { $0.isEmpty ? nil : $0 } }
        func invalid(_ field: String, _ message: String) -> Result<OutcomeReport, OutcomeInputError> {
            .failure(OutcomeInputError(code: "invalid_outcome", field: field, message: "'\(field)' \(message)"))
        }
        let subject: Subject
        switch (present(fields.attemptID), present(fields.tokenReference)) {
        case (let id?, nil):
            guard id.utf8.count == 36, let uuid = UUID(uuidString: id) else {
                return invalid("attemptId", "must be an attempt id (a UUID)")
            }
            subject = .attempt(uuid)
        case (nil, let reference?):
            guard reference.utf8.count <= 128,
                reference.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
            else { return invalid("tokenReference", "must be a token reference (1 to 128 printable characters)") }
            subject = .token(reference)
        case (nil, nil): return invalid("attemptId", "or 'tokenReference' is required")
        case (_?, _?): return invalid("attemptId", "and 'tokenReference' exclude each other: give one")
        }
        guard let labelText = present(fields.outcome), let label = Label(rawValue: labelText) else {
            return invalid("outcome", "must be fraud or legitimate")
        }
        guard let sourceText = present(fields.source), let source = Source(rawValue: sourceText) else {
            return invalid("source", "must be one of \(Source.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var reportedAt: Date?
        if let text = present(fields.reportedAt) {
            guard text.utf8.count <= 40, let date = RFC3339.date(text) else {
                return invalid("reportedAt", "must be an RFC 3339 time such as 2026-11-02T09:30:00Z")
            }
            guard date <= now.addingTimeInterval(300) else { return invalid("reportedAt", "is in the future") }
            reportedAt = date
        }
        var amount: Int64?
        var currency: String?
        if let text = present(fields.amountLost) {
            guard text.utf8.count <= 18, text.allSatisfy(\.isASCII), let value = Int64(text), value >= 0 else {
                return invalid("amountLost", "must be a whole number of minor units, 0 or more")
            }
            guard let code = present(fields.currency), currencies.contains(code) else {
                return invalid("currency", "must be \(currencies.joined(separator: ", ")) when an amount is given")
            }
            amount = value
            currency = code
        } else if present(fields.currency) != nil {
            return invalid("currency", "is given without an amount")
        }
        let note = fields.note ?? ""
        guard note.count <= noteLimit, note.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            return invalid("note", "must be at most \(noteLimit) printable characters on one line")
        }
        guard !ChangedAttemptsCSV.containsCardNumber(note) else {
            return invalid("note", "must not hold a card number")
        }
        return .success(
            OutcomeReport(
                subject: subject, label: label, source: source, reportedAt: reportedAt, amountLost: amount,
                currency: currency, note: note))
    }
}

/// Why one report was not recorded: its fields, or an attempt or token issuerd does not know.
/// `description` names the field or the id and is safe to show.
package struct OutcomeInputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `invalid_outcome`, `unknown_attempt` or `unknown_token`.
    package var code: String
    /// The field at fault, when one is.
    package var field: String?
    package var message: String

    package init(code: String, field: String? = nil, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    package var description: String { message }
}
