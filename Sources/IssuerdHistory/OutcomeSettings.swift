import Foundation
import IssuerdCore

/// How outcomes count and when a decision enters the review queue (`ISSUERD_OUTCOMES_*`,
/// `ISSUERD_REVIEW_*`).
///
/// Every key is documented in `docs/configuration.md`.
public struct OutcomeSettings: Sendable {
    /// Whether a network signal (MDES Notify Suspicious Events, a token deleted for fraud) counts
    /// as confirmed fraud (`ISSUERD_OUTCOMES_NETWORK_CONFIRMS`, default false: it is kept as an
    /// unconfirmed signal that an analyst or a chargeback confirms or overrules).
    public var networkConfirms: Bool
    /// How old an attempt must be to count as labelled-or-not for good
    /// (`ISSUERD_OUTCOMES_LABEL_MATURITY`, default 60d): most fraud is reported within it.
    public var labelMaturity: Duration
    /// How long a yellow decision's step-up may stay not completed before the decision enters the
    /// review queue (`ISSUERD_REVIEW_STEP_UP_WAIT`, default 1d).
    public var reviewStepUpWait: Duration

    /// The defaults.
    public init(
        networkConfirms: Bool = false, labelMaturity: Duration = .seconds(60 * 86400),
        reviewStepUpWait: Duration = .seconds(86400)
    ) {
        self.networkConfirms = networkConfirms
        self.labelMaturity = labelMaturity
        self.reviewStepUpWait = reviewStepUpWait
    }

    /// Reads and validates the outcome keys.
    ///
    /// - Throws: ``ConfigurationError`` naming the first malformed key.
    package init(_ reader: ConfigurationReader) throws {
        networkConfirms = try reader.boolean("ISSUERD_OUTCOMES_NETWORK_CONFIRMS", default: false)
        labelMaturity = try reader.duration(
            "ISSUERD_OUTCOMES_LABEL_MATURITY", default: .seconds(60 * 86400),
            in: .seconds(86400)...(.seconds(400 * 86400)))
        reviewStepUpWait = try reader.duration(
            "ISSUERD_REVIEW_STEP_UP_WAIT", default: .seconds(86400), in: .seconds(1)...(.seconds(30 * 86400)))
    }
}
