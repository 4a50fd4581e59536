/// What a velocity function counts.
public enum VelocityMetric: String, Sendable, Hashable, CaseIterable {
    /// Add-card attempts (every decision, whatever its flow).
    case attempts
    /// Distinct card ids among the attempts.
    case distinctCards = "distinct_cards"
    /// Distinct cardholder names among the attempts.
    case distinctNames = "distinct_names"
    /// Failed one-time-code entries.
    case failedOTPs = "failed_otps"
    /// Token deletions (by the cardholder or the issuer).
    case tokenDeletions = "token_deletions"
    /// Failed step-ups of any method (code, call, issuer app).
    case failedStepUps = "failed_stepups"

    /// The function name in rules, e.g. `failed_otps`.
    public var functionName: String { rawValue }

    /// The keys this metric may be grouped by, in the order docs list them.
    public var allowedKeys: [VelocityKey] {
        switch self {
        case .attempts: [.card, .device, .customer]
        case .distinctCards: [.device, .customer]
        case .distinctNames: [.device]
        case .failedOTPs, .failedStepUps: [.card, .customer]
        case .tokenDeletions: [.card, .device, .customer]
        }
    }

    /// The history events this metric reads.
    public var eventKind: VelocityEvent.Kind {
        switch self {
        case .attempts, .distinctCards, .distinctNames: .attempt
        case .failedOTPs: .otpFailure
        case .tokenDeletions: .tokenDeletion
        case .failedStepUps: .stepUpFailure
        }
    }
}

/// The subject key a velocity function groups by.
public enum VelocityKey: String, Sendable, Hashable, CaseIterable {
    /// The internal card id.
    case card
    /// The wallet device id.
    case device
    /// The customer id.
    case customer
}

/// One velocity value a compiled ruleset needs: metric, key and window.
///
/// The window is `[t − window, t)` for decision time `t`: history strictly before the
/// decision, so the attempt being decided never counts itself. In SQL:
/// `SELECT count(*) FROM <events> WHERE <key>_id = $1 AND at >= $2 - <window> AND at < $2`
/// (`count(DISTINCT card_id)` / `count(DISTINCT cardholder_name)` for the distinct metrics).
public struct VelocityQuery: Sendable, Hashable, CustomStringConvertible {
    /// What to count.
    public let metric: VelocityMetric
    /// Whose history.
    public let key: VelocityKey
    /// The window length in whole seconds.
    public let windowSeconds: Int

    /// A query; the compiler only builds allowed combinations.
    public init(metric: VelocityMetric, key: VelocityKey, windowSeconds: Int) {
        self.metric = metric
        self.key = key
        self.windowSeconds = windowSeconds
    }

    /// As rules write it, e.g. `attempts(card, 24h)`.
    public var description: String {
        "\(metric.functionName)(\(key.rawValue), \(RiskValue.formatDuration(Double(windowSeconds))))"
    }
}
