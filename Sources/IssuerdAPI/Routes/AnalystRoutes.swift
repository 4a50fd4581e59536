import Foundation
import IssuerdConsole
import IssuerdCore
import IssuerdHTTP
import IssuerdHistory
import IssuerdRisk

/// Read-only analyst views (analyst or admin key, or the console's session):
/// `GET /v1/admin/decisions`, `GET /v1/admin/rule-hits`, `GET /v1/admin/rules/performance`,
/// `GET /v1/admin/attempts` (filtered, paged by cursor, or the whole list as CSV), and
/// `GET /v1/admin/reads` (where they read, and how far behind the primary that is). All read on
/// ``ServiceContext/reads`` (the read database when one is set), through
/// ``ServiceContext/analystRead(_:)``; the roll-ups they bring up to date are written on the primary.
enum AnalystRoutes {
    /// Whether `text` holds a card number however it is written: a run of 12 or more decimal
    /// digits (of any script: full-width, Arabic-Indic…) anywhere in it, which separators may
    /// interrupt but a letter or another numeral ends. A card number with a letter before or
    /// after it is still refused; an attempt id or a card id holds letters between shorter runs;
    /// a last four is too short; an attempt id (a UUID in its canonical form, whose hex groups can
    /// hold long runs of digits) is never one. (A numeric id of 12 or more digits cannot be searched.)
    /// The same rule keeps card numbers out of the changed-attempts CSV (``ChangedAttemptsCSV``).
    static func containsCardNumber(_ text: String) -> Bool { ChangedAttemptsCSV.containsCardNumber(text) }

    static func register(in table: inout RouteTable, context: ServiceContext) {
        table.add(.get, "/v1/admin/decisions") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let period = try ConsoleQueries.Period(query: request.query, now: context.now)
            let channel = try choice(request.query["channel"], field: "channel", from: ConsoleQueries.channels)
            let network = try choice(request.query["network"], field: "network", from: ConsoleQueries.networks)
            return try .json(
                context.analystRead {
                    try ConsoleQueries.decisions(
                        period, channel: channel, network: network, now: context.now, database: context.reads,
                        rollUp: context.database)
                })
        }

        table.add(.get, "/v1/admin/rule-hits") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let period = try ConsoleQueries.Period(query: request.query, now: context.now)
            return try .json(
                context.analystRead {
                    try ConsoleQueries.ruleHits(
                        period, ruleset: context.rules.current, now: context.now, database: context.reads,
                        rollUp: context.database)
                })
        }

        table.add(.get, "/v1/admin/rules/performance") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let period = try ConsoleQueries.Period(query: request.query, now: context.now)
            let now = context.now
            return try .json(
                context.analystRead {
                    try context.reads.withConnection { connection in
                        try RulePerformance.read(
                            since: period.since, until: period.until, ruleset: context.rules.current,
                            maturity: context.configuration.outcomes.labelMaturity,
                            stepUpWait: context.configuration.outcomes.reviewStepUpWait, now: now,
                            connection: connection, rollUp: context.rollUpOnPrimary)
                    }
                })
        }

        table.add(.get, "/v1/admin/reads") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            return try .json(readsView(context))
        }

        table.add(.get, "/v1/admin/attempts") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            let filter = try AttemptFilter(query: request.query)
            guard filter.csv else {
                return try .json(context.analystRead { try AttemptList.page(filter, database: context.reads) })
            }
            // Streamed after the head is sent: a query the standby cancels half way ends the
            // transfer incomplete (never a complete-looking short file); the export is run again.
            let reads = context.reads
            let body = StreamedBody { body in try AttemptList.csv(filter, into: body, database: reads) }
            var response = HTTPResponse.streamed(body, contentType: "text/csv; charset=utf-8")
            response.headers.set("Content-Disposition", "attachment; filename=\"attempts.csv\"")
            return response
        }
    }

    /// `GET /v1/admin/reads`: where the analysts' reads go and, on a read database, how far
    /// behind the primary it is, checked now (the console shows it in its header).
    private static func readsView(_ context: ServiceContext) -> JSONValue {
        guard let replica = context.readReplica else {
            return ["source": "primary", "reachable": true, "standby": false, "lagSeconds": 0, "replayPaused": false]
        }
        let reading = replica.check()
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return [
            "source": "replica", "reachable": .bool(reading.status != nil),
            "standby": reading.status.map { .bool($0.inRecovery) } ?? .null,
            "lagSeconds": reading.status.map { .double($0.lagSeconds ?? 0) } ?? .null,
            "replayPaused": reading.status.map { .bool($0.replayPaused) } ?? .null,
            "checkedAt": .string(formatter.string(from: reading.checkedAt)),
        ]
    }

    /// An optional query value from a closed set (empty means absent).
    /// A query parameter that must be one of `choices`; nil when absent or empty.
    ///
    /// - Throws: 400 `invalid_request` naming the field and the choices.
    static func choice(_ value: String?, field: String, from choices: [String]) throws -> String? {
        guard let value, !value.isEmpty else { return nil }
        guard choices.contains(value) else {
            throw APIErrors.invalidRequest("'\(field)' must be one of \(choices.joined(separator: ", "))", field: field)
        }
        return value
    }
}
