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

    /// Brings both roll-ups ``read(since:until:ruleset:maturity:stepUpWait:now:connection:rollUp:)``
    /// reads up to date (writes, so on the primary).
    package static func rollUp(since: Date, stepUpWait: Duration, now: Date, connection: PostgresConnection) throws {
        _ = try ConsoleRollup.catchUp(now: now, needed: since, connection: connection)
        _ = try ConsoleRollup.catchUpStepUps(now: now, settle: stepUpWait, needed: since, connection: connection)
    }

    /// Reads the figures of `[since, until)` in one snapshot, each part from the smallest rows
    /// that give it exactly: hits and decisions from the hourly roll-up (``ConsoleRollup``) and,
    /// for the partial hours at either end, from the attempts; labels from the attempts with a
    /// current outcome; step-ups from their own roll-up for the hours that settled and from the
    /// yellow attempts of the rest. Brings both roll-ups up to date first (outside the snapshot),
    /// so `connection` must not be in a transaction.
    ///
    /// - Parameters:
    ///   - ruleset: Its rules are listed even without hits.
    ///   - maturity: How old an attempt must be for its outcome to count as known.
    ///   - stepUpWait: How long after its decision a step-up not completed counts as abandoned
    ///     (the review queue's wait): the step-up roll-up takes hours older than this.
    ///   - rollUp: Where the roll-ups are brought up to date (a write: the primary, when
    ///     `connection` is the analysts' read database); nil: on `connection`.
    package static func read(
        since: Date, until: Date, ruleset: Ruleset?, maturity: Duration, stepUpWait: Duration = .seconds(86400),
        now: Date, connection: PostgresConnection, rollUp: PostgresPool? = nil
    ) throws -> RulePerformance {
        let maturitySeconds = Double(maturity.components.seconds)
        let matureBefore = now.addingTimeInterval(-maturitySeconds)
        if let rollUp {
            try rollUp.withConnection {
                try Self.rollUp(since: since, stepUpWait: stepUpWait, now: now, connection: $0)
            }
        } else {
            try Self.rollUp(since: since, stepUpWait: stepUpWait, now: now, connection: connection)
        }
        return try connection.transaction(isolation: .repeatableRead) { connection in
            // Each statement reads a bounded number of rows, where compiling it (PostgreSQL's JIT,
            // chosen by the estimated cost of a large table) cost more than it saved: about
            // 0.3 s a statement on the quarter's history.
            try connection.execute("SET LOCAL jit = off")
            // What this database has rolled up, in this snapshot (a standby may be behind).
            let hitCoverage = try ConsoleRollup.coverage(now: now, connection: connection)
            let stepUpCoverage = try ConsoleRollup.stepUpCoverage(now: now, connection: connection)
            var totals = Totals(labelMaturityDays: Int(maturitySeconds / 86_400))
            totals.attempts = try attemptCount(
                since: since, until: until, coverage: hitCoverage, connection: connection)
            // Attempts at most `matureBefore` old: those before it, and any stamped exactly then.
            var mature = 0
            if matureBefore >= since {
                let end = min(until, matureBefore)
                mature = try attemptCount(since: since, until: end, coverage: hitCoverage, connection: connection)
                if end == matureBefore && matureBefore < until {
                    mature += Int(
                        try connection.query(
                            "SELECT count(*)::bigint AS n FROM provisioning_attempts WHERE created_at = \(matureBefore)"
                        ).first!.decode("n", as: Int64.self))
                }
            }
            totals.labelMaturity = totals.attempts == 0 ? 1 : Double(mature) / Double(totals.attempts)
            var rules: [String: Rule] = [:]
            for rule in ruleset?.rules ?? [] {
                rules["\(rule.mode.rawValue) \(rule.id)"] = Rule(ruleId: rule.id, mode: rule.mode.rawValue)
            }
            let update = { (id: String, mode: String, change: (inout Rule) -> Void) in
                var rule = rules["\(mode) \(id)"] ?? Rule(ruleId: id, mode: mode)
                change(&rule)
                rules["\(mode) \(id)"] = rule
            }
            // The period's labelled attempts, found through their outcomes' copy of the attempt's
            // time, with their outcomes' copy of its flow and hits (sql/0040; the attempt row is
            // read only for an outcome recorded without them, through `coalesce`, which a lateral
            // join would not spare: it looked every attempt up): the totals (the row without a
            // rule) and each rule's labels in one reading.
            for row in try connection.query(
                """
                WITH labelled AS MATERIALIZED (
                    SELECT * FROM (
                        SELECT o.attempt_id, o.attempt_created_at AS created_at, NULL::text AS channel,
                               coalesce(o.attempt_flow, (SELECT a.flow FROM provisioning_attempts a
                                                         WHERE a.attempt_id = o.attempt_id AND a.created_at = o.attempt_created_at)) AS flow,
                               NULL::text AS ruleset_version,
                               coalesce(o.attempt_hits, (SELECT a.hits FROM provisioning_attempts a
                                                         WHERE a.attempt_id = o.attempt_id AND a.created_at = o.attempt_created_at)) AS hits,
                               CASE WHEN o.outcome = 'fraud' THEN 'fraud' ELSE 'legitimate' END AS label,
                               CASE WHEN o.outcome = 'fraud' THEN coalesce(o.amount_lost, 0) ELSE 0 END AS lost
                        FROM attempt_outcomes o
                        WHERE o.is_current AND (o.outcome = 'legitimate' OR o.confirmed)
                          AND o.attempt_created_at >= \(since) AND o.attempt_created_at < \(until)
                    ) l WHERE flow IS NOT NULL)
                SELECT NULL::text AS rule_id, NULL::text AS mode,
                       count(*) FILTER (WHERE label = 'fraud')::bigint AS fraud,
                       count(*) FILTER (WHERE label = 'legitimate')::bigint AS legitimate,
                       coalesce(sum(lost) FILTER (WHERE label = 'fraud' AND flow = 'green'), 0)::bigint AS amount,
                       count(*) FILTER (WHERE label = 'fraud' AND flow = 'green')::bigint AS passed
                FROM labelled
                UNION ALL
                SELECT rule_id, mode,
                       count(*) FILTER (WHERE label = 'fraud')::bigint,
                       count(*) FILTER (WHERE label = 'legitimate')::bigint,
                       coalesce(sum(lost) FILTER (WHERE label = 'fraud'), 0)::bigint,
                       count(*) FILTER (WHERE flow = 'yellow' AND label = 'legitimate')::bigint
                FROM (\(unsafeSQL: ConsoleRollup.hitRowsSQL(from: "labelled", columns: ", a.label, a.lost"))) h
                WHERE \(unsafeSQL: ConsoleRollup.decidesSQL)
                GROUP BY rule_id, mode
                """)
            {
                let fraud = Int(try row.decode("fraud", as: Int64.self))
                let legitimate = Int(try row.decode("legitimate", as: Int64.self))
                let amount = try row.decode("amount", as: Int64.self)
                // The totals' fraud passed green; a rule's legitimate attempts it stepped up.
                let passed = Int(try row.decode("passed", as: Int64.self))
                guard let ruleID = try row.decode("rule_id", as: String?.self) else {
                    totals.fraud = fraud
                    totals.legitimate = legitimate
                    totals.fraudPassedGreen = passed
                    totals.fraudPassedGreenAmount = amount
                    continue
                }
                update(ruleID, try row.decode("mode")) {
                    $0.fraud = fraud
                    $0.legitimate = legitimate
                    $0.fraudAmount = amount
                    $0.legitimateSteppedUp = passed
                }
            }
            totals.unlabelled = totals.attempts - totals.fraud - totals.legitimate
            let split = ConsoleRollup.split(since: since, until: until, coverage: hitCoverage)
            for row in try connection.query(
                """
                SELECT rule_id, mode, sum(n)::bigint AS hits, coalesce(sum(n) FILTER (WHERE \(unsafeSQL: ConsoleRollup.decidesSQL)), 0)::bigint AS decided
                FROM (
                    SELECT rule_id, mode, outcome, flow, hits AS n FROM console_hourly_rule_hits
                    WHERE hour >= \(split.rolledFrom) AND hour < \(split.rolledTo)
                    UNION ALL
                    SELECT rule_id, mode, outcome, flow, 1 FROM (\(unsafeSQL: ConsoleRollup.hitRowsSQL)) h
                    WHERE (created_at >= \(since) AND created_at < \(split.rolledFrom))
                       OR (created_at >= \(split.rolledTo) AND created_at < \(until))
                ) r GROUP BY rule_id, mode
                """)
            {
                let hits = Int(try row.decode("hits", as: Int64.self))
                let decided = Int(try row.decode("decided", as: Int64.self))
                update(try row.decode("rule_id"), try row.decode("mode")) {
                    $0.hits = hits
                    $0.decided = decided
                }
            }
            for (key, stepUps) in try StepUps.read(
                since: since, until: until, coverage: stepUpCoverage, connection: connection)
            {
                update(key.ruleID, key.mode) {
                    $0.stepUpsStarted = stepUps.started
                    $0.stepUpsCompleted = stepUps.completed
                    $0.stepUpMedianSeconds = stepUps.medianSeconds
                }
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

    /// How many attempts `[since, until)` holds: whole rolled-up hours from
    /// `console_hourly_decisions`, the rest counted in `provisioning_attempts`.
    static func attemptCount(
        since: Date, until: Date, coverage: ConsoleRollup.Coverage, connection: PostgresConnection
    ) throws -> Int {
        guard since < until else { return 0 }
        let split = ConsoleRollup.split(since: since, until: until, coverage: coverage)
        return Int(
            try connection.query(
                """
                SELECT (SELECT coalesce(sum(attempts), 0) FROM console_hourly_decisions
                        WHERE hour >= \(split.rolledFrom) AND hour < \(split.rolledTo))::bigint
                     + (SELECT count(*) FROM provisioning_attempts
                        WHERE (created_at >= \(since) AND created_at < \(split.rolledFrom))
                           OR (created_at >= \(split.rolledTo) AND created_at < \(until)))::bigint AS n
                """
            ).first!.decode("n", as: Int64.self))
    }
}
