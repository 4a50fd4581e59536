import Foundation
import IssuerdPostgres
import IssuerdRisk

/// How well each rule (live and shadow) and each built-in check did over a period, measured
/// against the attempts' current outcomes: `GET /v1/admin/rules/performance`, `issuerd rules
/// performance` and the console's Rule hits page.
///
/// A hit **decided** its attempt when the flow is not green and the hit's outcome is at least as
/// severe as the flow: for a live rule, one of the hits that made the flow; for a shadow rule, one
/// that would have been among them. An attempt is **fraud** when its current outcome is confirmed
/// fraud, **legitimate** when it is legitimate, **unlabelled** otherwise (no report, or only an
/// unconfirmed network signal).
package struct RulePerformance: Encodable, Sendable, Equatable {
    /// One rule's or check's figures.
    package struct Rule: Encodable, Sendable, Equatable {
        package var ruleId: String
        package var mode: String
        package var hits = 0
        package var decided = 0
        package var fraud = 0
        package var legitimate = 0
        package var unlabelled = 0
        /// fraud / (fraud + legitimate) among the decided attempts; nil when none is labelled.
        package var precision: Double?
        /// fraud among the decided attempts / all confirmed fraud of the period; nil without fraud.
        package var recall: Double?
        /// Confirmed fraud of the period this rule did not decide.
        package var missedFraud = 0
        /// Amount lost (minor units) on the fraud it decided.
        package var fraudAmount: Int64 = 0
        /// Decided yellow attempts whose step-up began (the attempt created a token).
        package var stepUpsStarted = 0
        /// Of those, the tokens that were activated.
        package var stepUpsCompleted = 0
        /// Started and not completed.
        package var stepUpsAbandoned = 0
        /// Median seconds from the decision to the token's activation, over completed step-ups.
        package var stepUpMedianSeconds: Double?
        /// Legitimate attempts this rule sent to a step-up (the friction it costs good customers).
        package var legitimateSteppedUp = 0

        package init(ruleId: String, mode: String) {
            self.ruleId = ruleId
            self.mode = mode
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(ruleId, forKey: .ruleId)
            try container.encode(mode, forKey: .mode)
            try container.encode(hits, forKey: .hits)
            try container.encode(decided, forKey: .decided)
            try container.encode(fraud, forKey: .fraud)
            try container.encode(legitimate, forKey: .legitimate)
            try container.encode(unlabelled, forKey: .unlabelled)
            try container.encode(precision, forKey: .precision)
            try container.encode(recall, forKey: .recall)
            try container.encode(missedFraud, forKey: .missedFraud)
            try container.encode(fraudAmount, forKey: .fraudAmount)
            try container.encode(stepUpsStarted, forKey: .stepUpsStarted)
            try container.encode(stepUpsCompleted, forKey: .stepUpsCompleted)
            try container.encode(stepUpsAbandoned, forKey: .stepUpsAbandoned)
            try container.encode(stepUpMedianSeconds, forKey: .stepUpMedianSeconds)
            try container.encode(legitimateSteppedUp, forKey: .legitimateSteppedUp)
        }

        private enum CodingKeys: String, CodingKey {
            case ruleId, mode, hits, decided, fraud, legitimate, unlabelled, precision, recall, missedFraud
            case fraudAmount, stepUpsStarted, stepUpsCompleted, stepUpsAbandoned, stepUpMedianSeconds
            case legitimateSteppedUp
        }
    }

    /// The period's figures over every attempt.
    package struct Totals: Encodable, Sendable, Equatable {
        package var attempts = 0
        package var fraud = 0
        package var legitimate = 0
        package var unlabelled = 0
        /// Confirmed fraud decided green, and its amount lost.
        package var fraudPassedGreen = 0
        package var fraudPassedGreenAmount: Int64 = 0
        /// The share of the period's attempts old enough to have their outcome (1 when empty).
        package var labelMaturity = 1.0
        /// That age, in days (`ISSUERD_OUTCOMES_LABEL_MATURITY`).
        package var labelMaturityDays = 60
    }

    package var since: Date
    package var until: Date
    package var rules: [Rule]
    package var totals: Totals

    /// Reads the figures of `[since, until)` in one statement per part, in one snapshot.
    ///
    /// - Parameters:
    ///   - ruleset: Its rules are listed even without hits.
    ///   - maturity: How old an attempt must be for its outcome to count as known.
    package static func read(
        since: Date, until: Date, ruleset: Ruleset?, maturity: Duration, now: Date, connection: PostgresConnection
    ) throws -> RulePerformance {
        let maturitySeconds = Double(maturity.components.seconds)
        let matureBefore = now.addingTimeInterval(-maturitySeconds)
        return try connection.transaction(isolation: .repeatableRead) { connection in
            var totals = Totals(labelMaturityDays: Int(maturitySeconds / 86_400))
            let totalRow = try connection.query(
                """
                WITH performance_attempts AS (\(unsafeSQL: attemptsSQL)
                    WHERE p.created_at >= \(since) AND p.created_at < \(until))
                SELECT count(*)::bigint AS attempts,
                       count(*) FILTER (WHERE label = 'fraud')::bigint AS fraud,
                       count(*) FILTER (WHERE label = 'legitimate')::bigint AS legitimate,
                       count(*) FILTER (WHERE label = 'fraud' AND flow = 'green')::bigint AS passed,
                       coalesce(sum(lost) FILTER (WHERE label = 'fraud' AND flow = 'green'), 0)::bigint AS passed_amount,
                       count(*) FILTER (WHERE created_at <= \(matureBefore))::bigint AS mature
                FROM performance_attempts
                """
            ).first!
            totals.attempts = Int(try totalRow.decode("attempts", as: Int64.self))
            totals.fraud = Int(try totalRow.decode("fraud", as: Int64.self))
            totals.legitimate = Int(try totalRow.decode("legitimate", as: Int64.self))
            totals.unlabelled = totals.attempts - totals.fraud - totals.legitimate
            totals.fraudPassedGreen = Int(try totalRow.decode("passed", as: Int64.self))
            totals.fraudPassedGreenAmount = try totalRow.decode("passed_amount", as: Int64.self)
            let mature = Int(try totalRow.decode("mature", as: Int64.self))
            totals.labelMaturity = totals.attempts == 0 ? 1 : Double(mature) / Double(totals.attempts)
            var rules: [String: Rule] = [:]
            for rule in ruleset?.rules ?? [] {
                rules["\(rule.mode.rawValue) \(rule.id)"] = Rule(ruleId: rule.id, mode: rule.mode.rawValue)
            }
            for row in try connection.query(
                """
                SELECT rule_id, mode, count(*)::bigint AS hits,
                       count(*) FILTER (WHERE decides)::bigint AS decided,
                       count(*) FILTER (WHERE decides AND label = 'fraud')::bigint AS fraud,
                       count(*) FILTER (WHERE decides AND label = 'legitimate')::bigint AS legitimate,
                       coalesce(sum(lost) FILTER (WHERE decides AND label = 'fraud'), 0)::bigint AS amount,
                       count(*) FILTER (WHERE decides AND flow = 'yellow' AND started)::bigint AS started,
                       count(*) FILTER (WHERE decides AND flow = 'yellow' AND completed)::bigint AS completed,
                       count(*) FILTER (WHERE decides AND flow = 'yellow' AND label = 'legitimate')::bigint AS friction,
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FILTER (WHERE decides AND flow = 'yellow' AND completed) AS median
                FROM (
                    WITH performance_attempts AS (\(unsafeSQL: attemptsSQL)
                        WHERE p.created_at >= \(since) AND p.created_at < \(until))
                    \(unsafeSQL: hitsSQL)) h
                GROUP BY rule_id, mode
                """)
            {
                var rule = Rule(ruleId: try row.decode("rule_id"), mode: try row.decode("mode"))
                rule.hits = Int(try row.decode("hits", as: Int64.self))
                rule.decided = Int(try row.decode("decided", as: Int64.self))
                rule.fraud = Int(try row.decode("fraud", as: Int64.self))
                rule.legitimate = Int(try row.decode("legitimate", as: Int64.self))
                rule.fraudAmount = try row.decode("amount", as: Int64.self)
                rule.stepUpsStarted = Int(try row.decode("started", as: Int64.self))
                rule.stepUpsCompleted = Int(try row.decode("completed", as: Int64.self))
                rule.legitimateSteppedUp = Int(try row.decode("friction", as: Int64.self))
                rule.stepUpMedianSeconds = try row.decode("median", as: Double?.self)
                rules["\(rule.mode) \(rule.ruleId)"] = rule
            }
            let measured = rules.values.map { rule in
                var rule = rule
                rule.unlabelled = rule.decided - rule.fraud - rule.legitimate
                rule.precision =
                    rule.fraud + rule.legitimate == 0 ? nil : Double(rule.fraud) / Double(rule.fraud + rule.legitimate)
                rule.recall = totals.fraud == 0 ? nil : Double(rule.fraud) / Double(totals.fraud)
                rule.missedFraud = totals.fraud - rule.fraud
                rule.stepUpsAbandoned = rule.stepUpsStarted - rule.stepUpsCompleted
                return rule
            }
            return RulePerformance(
                since: since, until: until,
                rules: measured.sorted { ($0.mode, $0.ruleId) < ($1.mode, $1.ruleId) }, totals: totals)
        }
    }

    /// Every attempt (the caller adds its period's `WHERE` on `p.created_at`) with
    /// its label, the amount lost on confirmed fraud, and for a yellow attempt whether its
    /// step-up began (it created a token) and completed (the token was activated), and when.
    static let attemptsSQL = """
        SELECT p.attempt_id, p.flow, p.hits, p.created_at,
               CASE WHEN o.outcome = 'fraud' AND o.confirmed THEN 'fraud'
                    WHEN o.outcome = 'legitimate' THEN 'legitimate' END AS label,
               CASE WHEN o.outcome = 'fraud' AND o.confirmed THEN coalesce(o.amount_lost, 0) ELSE 0 END AS lost,
               t.token_reference IS NOT NULL AS started,
               coalesce(t.status IN ('active', 'suspended') OR e.at IS NOT NULL, false) AS completed,
               extract(epoch FROM e.at - p.created_at)::float8 AS seconds
        FROM provisioning_attempts p
        LEFT JOIN attempt_outcomes o ON o.attempt_id = p.attempt_id AND o.is_current
        LEFT JOIN LATERAL (
            SELECT token_reference, status FROM tokens WHERE attempt_id = p.attempt_id AND p.flow = 'yellow'
            ORDER BY created_at LIMIT 1) t ON true
        LEFT JOIN LATERAL (
            SELECT min(at) AS at FROM token_events WHERE token_reference = t.token_reference AND event = 'activated'
        ) e ON true
        """

    /// One row per hit of ``attemptsSQL``'s attempts: rule (or check) id, mode, and whether the
    /// hit decided its attempt.
    static let hitsSQL = """
        SELECT a.*, r.rule_id, r.mode,
               (a.flow <> 'green' AND array_position(ARRAY['green', 'yellow', 'orange'], r.outcome)
                                      >= array_position(ARRAY['green', 'yellow', 'orange'], a.flow)) AS decides
        FROM performance_attempts a
        CROSS JOIN LATERAL (
            SELECT coalesce(x ->> 'rule', x ->> 'ruleId') AS rule_id, coalesce(x ->> 'mode', 'live') AS mode,
                   coalesce(x ->> 'outcome', a.flow) AS outcome
            FROM jsonb_array_elements(CASE WHEN jsonb_typeof(a.hits) = 'array' THEN a.hits ELSE '[]'::jsonb END) x
            WHERE jsonb_typeof(x) = 'object') r
        WHERE r.rule_id IS NOT NULL
        """
}
