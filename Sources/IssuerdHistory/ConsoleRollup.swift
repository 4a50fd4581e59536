import Foundation
import IssuerdPostgres

/// The hourly roll-ups behind the Decisions and Rule hits pages (`console_hourly_*`), brought
/// up to date when a page reads them.
///
/// Why at read time: the provisioning INSERT is the hot path, so it gets no trigger and
/// `provisioning_attempts` no new index. Complete hours that ended more than ``lag`` ago are
/// aggregated once (under an advisory lock, so instances never double-count); a page then reads
/// the roll-up for whole hours and `provisioning_attempts` (BRIN on `created_at`) only for the
/// partial hours at either end of its period.
package enum ConsoleRollup {
    /// How long after an hour ends before it is rolled up: a transaction that stamped an attempt
    /// just before the hour ended has long committed by then.
    package static let lag: TimeInterval = 300
    /// The most history one transaction rolls up, so a first catch-up over months holds its
    /// lock in short steps.
    package static let chunk: TimeInterval = 86_400
    private static let lockKey: Int64 = 0x636F_6E73_6F6C_65
    private static let stepUpLockKey: Int64 = 0x7374_6570_7570_73

    /// The network read from an attempt's inputs (flat, or under `attributes`).
    package static let networkSQL =
        "coalesce(inputs ->> 'card.network', inputs -> 'attributes' ->> 'card.network', 'unknown')"

    /// How long one request spends rolling up before it reads what is left from the raw table:
    /// the first page view over a long history must not outlast the proxy's timeout, and each
    /// step commits, so the next request carries on.
    package static let budget: Duration = .seconds(2)

    /// What is rolled up: every hour in `[from, until)`.
    package struct Coverage: Equatable {
        package var from: Date
        package var until: Date

        /// Creates the value from every stored property.
        package init(from: Date, until: Date) {
            self.from = from
            self.until = until
        }
    }

    /// Rolls up the complete hours older than ``lag``, one day per transaction, newest first
    /// (new hours, then older history backwards), for at most ``budget``; returns what is rolled
    /// up now (the rest is read raw, so answers are exact either way).
    package static func catchUp(now: Date, database: PostgresPool) throws -> Coverage {
        try database.withConnection { try catchUp(now: now, connection: $0) }
    }

    /// ``catchUp(now:database:)`` on a connection the caller holds (outside any transaction).
    /// With `needed`, older history is rolled up only back to that time (a read of the last month
    /// does not pay, call after call, for rolling up the quarter before it).
    package static func catchUp(now: Date, needed: Date? = nil, connection: PostgresConnection) throws -> Coverage {
        try catchUp(
            state: "console_rollup_state", lockKey: lockKey, before: floorHour(now.addingTimeInterval(-lag)),
            needed: needed, connection: connection, rollUp: rollUp(from:until:connection:))
    }

    /// What the hits' and decisions' roll-up holds, as the database `connection` is on sees it:
    /// read it in the same snapshot as the roll-up's rows (a REPEATABLE READ transaction). On a
    /// standby that is what it has replayed, which may be less than the primary's catch-up just
    /// wrote; the rest is read raw, so the answers stay exact. Nothing rolled up yet reads as an
    /// empty coverage at `now`.
    package static func coverage(now: Date, connection: PostgresConnection) throws -> Coverage {
        try coverage(state: "console_rollup_state", now: now, connection: connection)
    }

    /// ``coverage(now:connection:)`` of the step-ups' roll-up (``catchUpStepUps(now:settle:needed:connection:)``).
    package static func stepUpCoverage(now: Date, connection: PostgresConnection) throws -> Coverage {
        try coverage(state: "console_stepup_rollup_state", now: now, connection: connection)
    }

    private static func coverage(state: String, now: Date, connection: PostgresConnection) throws -> Coverage {
        guard let row = try connection.query("SELECT rolled_from, rolled_until FROM \(unsafeSQL: state)").first else {
            return Coverage(from: now, until: now)
        }
        return Coverage(from: try row.decode("rolled_from"), until: try row.decode("rolled_until"))
    }

    /// Rolls up the step-ups of rule performance (`console_hourly_stepups`) as ``catchUp(now:connection:)``
    /// rolls up hits, for the hours that ended more than `settle` (plus ``lag``) ago: by then a
    /// step-up not completed counts as abandoned (the review queue's wait), so a rolled-up hour's
    /// figures never change. Returns what is rolled up now.
    package static func catchUpStepUps(
        now: Date, settle: Duration, needed: Date? = nil, connection: PostgresConnection
    ) throws -> Coverage {
        let before = floorHour(now.addingTimeInterval(-lag - Double(settle.components.seconds)))
        return try catchUp(
            state: "console_stepup_rollup_state", lockKey: stepUpLockKey, before: before, needed: needed,
            connection: connection
        ) { start, end, connection in
            try connection.execute(
                """
                INSERT INTO console_hourly_stepups (hour, rule_id, mode, started, completed, seconds, buckets, counts)
                SELECT hour, rule_id, mode, started, completed, seconds,
                       ARRAY(SELECT \(unsafeSQL: stepUpBucketSQL("x")) AS b FROM unnest(seconds) x GROUP BY b ORDER BY b),
                       ARRAY(SELECT count(*) FROM unnest(seconds) x GROUP BY \(unsafeSQL: stepUpBucketSQL("x"))
                             ORDER BY \(unsafeSQL: stepUpBucketSQL("x")))
                FROM (
                    SELECT date_trunc('hour', created_at, 'UTC') AS hour, rule_id, mode, count(*) AS started,
                           count(*) FILTER (WHERE completed) AS completed,
                           coalesce(array_agg(seconds ORDER BY seconds) FILTER (WHERE completed AND seconds IS NOT NULL), '{}')
                               AS seconds
                    FROM (\(unsafeSQL: stepUpRowsSQL)) s
                    WHERE created_at >= \(start) AND created_at < \(end)
                    GROUP BY 1, 2, 3
                ) g
                """)
        }
    }

    /// The lower bounds of the buckets a step-up's completion time (seconds) is counted in:
    /// 0, then about 2 % apart from one second to a week (each bound a whole second, so SQL and
    /// any reader compare the same numbers). Bucket `k` (`width_bucket`) holds `[bounds[k-1],
    /// bounds[k])`; bucket 0 holds negative times (an activation stamped before its decision).
    package static let stepUpBucketBounds: [Int] = {
        var bounds = [0]
        var step = 0
        while bounds.last! < 604_800 {
            let next = Int((pow(2.0, Double(step) / 32)).rounded())
            if next > bounds.last! { bounds.append(next) }
            step += 1
        }
        return bounds
    }()

    /// The bucket of the completion time `expression` (a float8) on ``stepUpBucketBounds``.
    package static func stepUpBucketSQL(_ expression: String) -> String {
        "width_bucket(\(expression), '{\(stepUpBucketBounds.map(String.init).joined(separator: ","))}'::float8[])"
    }

    /// Brings the roll-up whose state row is in `state` up to `before` (a whole hour), one day
    /// per transaction under the advisory lock `lockKey`, for at most ``budget``.
    private static func catchUp(
        state: String, lockKey: Int64, before target: Date, needed: Date?, connection: PostgresConnection,
        rollUp: (Date, Date, PostgresConnection) throws -> Void
    ) throws -> Coverage {
        let started = ContinuousClock.now
        while true {
            let (coverage, done) = try connection.transaction { connection -> (Coverage, Bool) in
                try connection.execute("SELECT pg_advisory_xact_lock(\(lockKey))")
                let history: Date
                var coverage: Coverage
                if let row = try connection.query(
                    "SELECT history_from, rolled_from, rolled_until FROM \(unsafeSQL: state)"
                ).first {
                    history = try row.decode("history_from")
                    coverage = Coverage(from: try row.decode("rolled_from"), until: try row.decode("rolled_until"))
                } else {
                    let oldest =
                        try connection.query("SELECT min(created_at) AS oldest FROM provisioning_attempts").first?
                        .decode("oldest", as: Date?.self) ?? nil
                    history = min(floorHour(oldest ?? target), target)
                    coverage = Coverage(from: target, until: target)
                    try connection.execute(
                        "INSERT INTO \(unsafeSQL: state) (history_from, rolled_from, rolled_until) VALUES (\(history), \(target), \(target))"
                    )
                }
                if coverage.until < target {
                    let end = min(target, coverage.until.addingTimeInterval(chunk))
                    try rollUp(coverage.until, end, connection)
                    coverage.until = end
                } else if coverage.from > max(history, floorHour(needed ?? history)) {
                    let start = max(history, floorHour(needed ?? history), coverage.from.addingTimeInterval(-chunk))
                    try rollUp(start, coverage.from, connection)
                    coverage.from = start
                } else {
                    return (coverage, true)
                }
                try connection.execute(
                    "UPDATE \(unsafeSQL: state) SET rolled_from = \(coverage.from), rolled_until = \(coverage.until)")
                return (coverage, false)
            }
            if done || ContinuousClock.now - started > budget { return coverage }
        }
    }

    /// Aggregates `[start, end)` (whole hours not yet rolled up) into both tables.
    private static func rollUp(from start: Date, until end: Date, connection: PostgresConnection) throws {
        try connection.execute(
            """
            INSERT INTO console_hourly_decisions (hour, channel, network, flow, attempts)
            SELECT date_trunc('hour', created_at, 'UTC'), channel, \(unsafeSQL: networkSQL), flow, count(*)
            FROM provisioning_attempts WHERE created_at >= \(start) AND created_at < \(end)
            GROUP BY 1, 2, 3, 4
            """)
        try connection.execute(
            """
            INSERT INTO console_hourly_rule_hits (hour, rule_id, mode, outcome, flow, decisive, ruleset_version, hits)
            SELECT date_trunc('hour', created_at, 'UTC'), rule_id, mode, outcome, flow, decisive, ruleset_version, count(*)
            FROM (\(unsafeSQL: hitRowsSQL)) h
            WHERE created_at >= \(start) AND created_at < \(end)
            GROUP BY 1, 2, 3, 4, 5, 6, 7
            """)
    }

    /// Hits per rule id in `[since, until)`, of one ruleset version or of all: the counts of
    /// `GET /v1/admin/rules` (``RulesetStatusView``), read like the pages read theirs.
    package static func hitCounts(
        since: Date, until: Date, version: String?, coverage: Coverage, connection: PostgresConnection
    ) throws -> [String: Int] {
        let split = split(since: since, until: until, coverage: coverage)
        var counts: [String: Int] = [:]
        for row in try connection.query(
            """
            SELECT rule_id, sum(n)::bigint AS n FROM (
                SELECT rule_id, hits AS n FROM console_hourly_rule_hits
                WHERE hour >= \(split.rolledFrom) AND hour < \(split.rolledTo)
                  AND (\(version)::text IS NULL OR ruleset_version = \(version))
                UNION ALL
                SELECT rule_id, 1 FROM (\(unsafeSQL: hitRowsSQL)) h
                WHERE ((created_at >= \(since) AND created_at < \(split.rolledFrom))
                       OR (created_at >= \(split.rolledTo) AND created_at < \(until)))
                  AND (\(version)::text IS NULL OR ruleset_version = \(version))
            ) r GROUP BY rule_id
            """)
        {
            counts[try row.decode("rule_id")] = Int(try row.decode("n", as: Int64.self))
        }
        return counts
    }

    /// One row per hit of every attempt (hits as DecisionJSON writes them, and the older
    /// `ruleId` and plain-string shapes ``RulesetStatusView`` always read): rule, mode, outcome, the attempt's flow and whether
    /// the hit decided the flow (live, not green, and the only live hit with the flow's outcome:
    /// without it the flow would have been milder). A hit naming no rule (`"rule": null`, a row
    /// edited by hand) is left out: `rule_id` is never null. Filter on `created_at` outside.
    package static let hitRowsSQL = hitRowsSQL(from: "provisioning_attempts")

    /// ``hitRowsSQL`` over `source` (a table or a CTE with the columns of `provisioning_attempts`
    /// it reads), each row also carrying the attempt's id and the source's `columns` (e.g.
    /// `", a.label"`).
    package static func hitRowsSQL(from source: String, columns: String = "") -> String {
        """
        SELECT a.attempt_id, a.created_at, a.channel, a.flow, a.ruleset_version\(columns),
               CASE jsonb_typeof(h) WHEN 'string' THEN h #>> '{}' ELSE coalesce(h ->> 'rule', h ->> 'ruleId', h ->> 'id') END AS rule_id,
               coalesce(h ->> 'mode', 'live') AS mode, coalesce(h ->> 'outcome', a.flow) AS outcome,
               (coalesce(h ->> 'mode', 'live') = 'live' AND h ->> 'outcome' = a.flow AND a.flow <> 'green'
                AND (SELECT count(*) FROM jsonb_array_elements(a.hits) o
                     WHERE coalesce(o ->> 'mode', 'live') = 'live' AND o ->> 'outcome' = a.flow
                       AND coalesce(o ->> 'rule', o ->> 'ruleId', o ->> 'id') IS NOT NULL) = 1) AS decisive
        FROM \(source) a
        CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(a.hits) = 'array' THEN a.hits ELSE '[]'::jsonb END) h
        WHERE (jsonb_typeof(h) = 'string' OR (jsonb_typeof(h) = 'object' AND coalesce(h ->> 'rule', h ->> 'ruleId', h ->> 'id') IS NOT NULL))
        """
    }

    /// Whether a row with `outcome` (a hit's) and `flow` (its attempt's) decided the attempt, as
    /// rule performance counts it: the flow is not green and the hit is at least as severe.
    package static let decidesSQL = """
        (flow <> 'green' AND array_position(ARRAY['green', 'yellow', 'orange'], outcome)
                             >= array_position(ARRAY['green', 'yellow', 'orange'], flow))
        """

    /// One row per hit that decided a yellow attempt whose decision created a token (a step-up
    /// started): the attempt's time, rule id, mode, whether the token was activated (its status is
    /// active or suspended, or it has an activation event) and the seconds from the decision to
    /// its first activation. Filter on `created_at` outside.
    package static let stepUpRowsSQL = """
        SELECT h.created_at, h.rule_id, h.mode,
               coalesce(t.status IN ('active', 'suspended') OR e.at IS NOT NULL, false) AS completed,
               extract(epoch FROM e.at - h.created_at)::float8 AS seconds
        FROM (\(hitRowsSQL(from: "(SELECT * FROM provisioning_attempts WHERE flow = 'yellow')"))) h
        JOIN LATERAL (
            SELECT token_reference, status FROM tokens WHERE attempt_id = h.attempt_id ORDER BY created_at LIMIT 1) t ON true
        LEFT JOIN LATERAL (
            SELECT min(at) AS at FROM token_events WHERE token_reference = t.token_reference AND event = 'activated'
        ) e ON true
        WHERE h.flow = 'yellow' AND \(decidesSQL)
        """

    /// How a period splits between the roll-up and the raw table.
    package struct Split: Equatable {
        /// Whole hours `[rolledFrom, rolledTo)` read from the roll-up.
        package var rolledFrom: Date
        package var rolledTo: Date

        /// Creates the value from every stored property.
        package init(rolledFrom: Date, rolledTo: Date) {
            self.rolledFrom = rolledFrom
            self.rolledTo = rolledTo
        }
    }

    /// Splits `[since, until)`: whole hours inside it that are rolled up come from the roll-up,
    /// `[since, rolledFrom)` and `[rolledTo, until)` from `provisioning_attempts`.
    package static func split(since: Date, until: Date, coverage: Coverage) -> Split {
        let from = min(max(ceilHour(since), coverage.from), until)
        let to = max(from, min(coverage.until, floorHour(until)))
        return Split(rolledFrom: from, rolledTo: to)
    }

    package static func floorHour(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 3600).rounded(.down) * 3600)
    }

    package static func ceilHour(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 3600).rounded(.up) * 3600)
    }
}
