import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk

/// The queries behind `GET /v1/admin/decisions` and `/v1/admin/rule-hits` (the console's
/// Decisions and Rule hits pages), over ``ConsoleRollup`` and the indexes `provisioning_attempts`
/// already has; ``AttemptList`` reads the Attempts page.
package enum ConsoleQueries {
    /// A validated period: RFC 3339 `since`/`until`, the last 24 hours when both are absent.
    package struct Period: Sendable {
        package var since: Date
        package var until: Date

        /// The longest period one request may read (the chart's hours stay bounded).
        package static let maximum: TimeInterval = 92 * 86_400

        package init(since: Date, until: Date) {
            self.since = since
            self.until = until
        }

        package init(query: [String: String], now: Date) throws {
            let until = try query["until"].map { try Self.date($0, field: "until") } ?? now
            let since =
                try query["since"].map { try Self.date($0, field: "since") } ?? until.addingTimeInterval(-86_400)
            guard since < until else {
                throw APIErrors.invalidRequest("'since' must be before 'until'", field: "since")
            }
            guard until.timeIntervalSince(since) <= Self.maximum else {
                throw APIErrors.invalidRequest("the period may span at most 92 days", field: "since")
            }
            self.init(since: since, until: until)
        }

        private static func date(_ text: String, field: String) throws -> Date {
            guard let date = RFC3339.date(text) else {
                throw APIErrors.invalidRequest("'\(field)' must be an RFC 3339 timestamp", field: field)
            }
            return date
        }
    }

    package static let channels = ["in_app", "wallet_extension", "tsp", "mdes", "google_pay", "samsung_pay"]
    package static let networks = ["visa", "mastercard", "amex", "discover", "jcb", "unionpay", "other", "unknown"]

    // MARK: Decisions

    package struct HourMix: Encodable, Sendable {
        package var hour: Date
        package var green = 0
        package var yellow = 0
        package var orange = 0
    }

    package struct DecisionsView: Encodable, Sendable {
        package var since: Date
        package var until: Date
        package var channel: String?
        package var network: String?
        package var totals: HourMix
        /// One entry per hour of the period, oldest first, zeros included.
        package var hours: [HourMix]
        package var channels: [String]
        package var networks: [String]
    }

    /// The green/yellow/orange mix per hour, read on `database` (the analysts' read database)
    /// after the roll-up is brought up to date on `rollUp` (the primary; `database` when nil).
    package static func decisions(
        _ period: Period, channel: String?, network: String?, now: Date, database: PostgresPool,
        rollUp: PostgresPool? = nil
    ) throws -> DecisionsView {
        let rows = try readRolledUp(period, now: now, database: database, rollUp: rollUp) { split, connection in
            try connection.query(
                """
                SELECT hour, flow, sum(n)::bigint AS n FROM (
                    SELECT hour, flow, attempts AS n FROM console_hourly_decisions
                    WHERE hour >= \(split.rolledFrom) AND hour < \(split.rolledTo)
                      AND (\(channel)::text IS NULL OR channel = \(channel)) AND (\(network)::text IS NULL OR network = \(network))
                    UNION ALL
                    SELECT date_trunc('hour', created_at, 'UTC'), flow, 1 FROM provisioning_attempts
                    WHERE ((created_at >= \(period.since) AND created_at < \(split.rolledFrom))
                           OR (created_at >= \(split.rolledTo) AND created_at < \(period.until)))
                      AND (\(channel)::text IS NULL OR channel = \(channel))
                      AND (\(network)::text IS NULL OR \(unsafeSQL: ConsoleRollup.networkSQL) = \(network))
                ) m GROUP BY hour, flow
                """)
        }
        var byHour: [Date: HourMix] = [:]
        var totals = HourMix(hour: period.since)
        for row in rows {
            let hour: Date = try row.decode("hour")
            let count = Int(try row.decode("n", as: Int64.self))
            var mix = byHour[hour] ?? HourMix(hour: hour)
            switch try row.decode("flow", as: String.self) {
            case "green":
                mix.green += count
                totals.green += count
            case "yellow":
                mix.yellow += count
                totals.yellow += count
            default:
                mix.orange += count
                totals.orange += count
            }
            byHour[hour] = mix
        }
        var hours: [HourMix] = []
        var hour = ConsoleRollup.floorHour(period.since)
        while hour < period.until {
            hours.append(byHour[hour] ?? HourMix(hour: hour))
            hour = hour.addingTimeInterval(3600)
        }
        return DecisionsView(
            since: period.since, until: period.until, channel: channel, network: network, totals: totals,
            hours: hours, channels: channels, networks: networks)
    }

    /// Brings the roll-up up to date on `rollUp` (a write: the primary), then runs `read` on
    /// `database` in one snapshot with the split of `period` that database's own roll-up gives
    /// (a standby may not have replayed the newest hours yet; those are then read raw).
    private static func readRolledUp<T>(
        _ period: Period, now: Date, database: PostgresPool, rollUp: PostgresPool?,
        _ read: (ConsoleRollup.Split, PostgresConnection) throws -> T
    ) throws -> T {
        _ = try ConsoleRollup.catchUp(now: now, database: rollUp ?? database)
        return try database.withConnection { connection in
            try connection.transaction(isolation: .repeatableRead) { connection in
                let coverage = try ConsoleRollup.coverage(now: now, connection: connection)
                return try read(
                    ConsoleRollup.split(since: period.since, until: period.until, coverage: coverage), connection)
            }
        }
    }

    // MARK: Rule hits

    package struct RuleHitsView: Encodable, Sendable {
        package struct RuleRow: Encodable, Sendable {
            package var id: String
            package var title: String
            /// live, shadow, or `builtin` for live hits that are not rules of the serving ruleset
            /// (card not found, a removed rule).
            package var mode: String
            package var outcome: String
            package var location: String?
            package var hits: Int
            /// Live: hits that decided the final flow (it would have been milder without them).
            package var changedFlow: Int
            /// Shadow: the flows of the attempts it hit (`green: 40` = 40 green attempts it hit).
            package var flowsHit: [String: Int]
            /// Shadow: hits where, had it been live, the flow would have become its outcome.
            package var wouldChange: Int
            /// Hits per bucket of the period (``RuleHitsView/bucketSeconds`` each), for a sparkline.
            package var series: [Int]
        }

        package var since: Date
        package var until: Date
        package var version: String
        package var bucketSeconds: Int
        package var rules: [RuleRow]
    }

    /// Per rule: hits over the period, how many changed the final flow, what shadow rules would
    /// have done; read as ``decisions(_:channel:network:now:database:rollUp:)`` reads.
    package static func ruleHits(
        _ period: Period, ruleset: Ruleset, now: Date, database: PostgresPool, rollUp: PostgresPool? = nil
    ) throws -> RuleHitsView {
        let bucketHours = max(1, Int((period.until.timeIntervalSince(period.since) / 3600 / 48).rounded(.up)))
        let origin = ConsoleRollup.floorHour(period.since)
        let bucketSeconds = bucketHours * 3600
        let buckets = Int((period.until.timeIntervalSince(origin) / Double(bucketSeconds)).rounded(.up))
        let rows = try readRolledUp(period, now: now, database: database, rollUp: rollUp) { split, connection in
            try connection.query(
                """
                SELECT hour, rule_id, mode, outcome, flow, decisive, sum(n)::bigint AS n FROM (
                    SELECT hour, rule_id, mode, outcome, flow, decisive, hits AS n FROM console_hourly_rule_hits
                    WHERE hour >= \(split.rolledFrom) AND hour < \(split.rolledTo)
                    UNION ALL
                    SELECT date_trunc('hour', created_at, 'UTC'), rule_id, mode, outcome, flow, decisive, 1
                    FROM (\(unsafeSQL: ConsoleRollup.hitRowsSQL)) h
                    WHERE (created_at >= \(period.since) AND created_at < \(split.rolledFrom))
                       OR (created_at >= \(split.rolledTo) AND created_at < \(period.until))
                ) r GROUP BY 1, 2, 3, 4, 5, 6
                """)
        }
        var byRule: [String: RuleHitsView.RuleRow] = [:]
        for rule in ruleset.rules {
            byRule[rule.id] = .init(
                id: rule.id, title: rule.title, mode: rule.mode.rawValue, outcome: rule.outcome.description,
                location: rule.location.description, hits: 0, changedFlow: 0, flowsHit: [:], wouldChange: 0,
                series: Array(repeating: 0, count: buckets))
        }
        for row in rows {
            let id: String = try row.decode("rule_id")
            let mode: String = try row.decode("mode")
            let outcome: String = try row.decode("outcome")
            let flow: String = try row.decode("flow")
            let count = Int(try row.decode("n", as: Int64.self))
            let hour: Date = try row.decode("hour")
            var entry =
                byRule[id]
                ?? .init(
                    id: id, title: "not a rule of the serving ruleset (a built-in check, or a rule since removed)",
                    mode: mode == "shadow" ? "shadow" : "builtin", outcome: outcome, location: nil, hits: 0,
                    changedFlow: 0,
                    flowsHit: [:], wouldChange: 0, series: Array(repeating: 0, count: buckets))
            entry.hits += count
            if try row.decode("decisive", as: Bool.self) { entry.changedFlow += count }
            if mode == "shadow" {
                entry.flowsHit[flow, default: 0] += count
                if severity(outcome) > severity(flow) { entry.wouldChange += count }
            }
            let bucket = Int(hour.timeIntervalSince(origin)) / bucketSeconds
            if entry.series.indices.contains(bucket) { entry.series[bucket] += count }
            byRule[id] = entry
        }
        let order = Dictionary(uniqueKeysWithValues: ruleset.rules.enumerated().map { ($1.id, $0) })
        let rules = byRule.values.sorted { (order[$0.id] ?? Int.max, $0.id) < (order[$1.id] ?? Int.max, $1.id) }
        return RuleHitsView(
            since: period.since, until: period.until, version: ruleset.version, bucketSeconds: bucketSeconds,
            rules: rules)
    }

    private static func severity(_ flow: String) -> Int {
        switch flow {
        case "orange": 2
        case "yellow": 1
        default: 0
        }
    }
}
