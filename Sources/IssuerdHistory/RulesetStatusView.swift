import Foundation
import IssuerdPostgres
import IssuerdRisk

/// The body of `GET /v1/admin/rules` (and of a successful `POST /v1/admin/rules/reload`).
///
/// Hit counts come from `provisioning_attempts.hits` (every instance's decisions, not only this
/// one's), read through the console's hourly roll-up (``ConsoleRollup``): `hits` over decisions made by the serving version since it was loaded (at most the
/// last 30 days, see `hitCounts.sinceLoadFrom`), `hitsLast24h` over every version's decisions of
/// the last 24 hours.
package struct RulesetStatusView: Encodable, Sendable {
    package struct RuleView: Encodable, Sendable {
        package var id: String
        package var title: String
        package var outcome: String
        package var reason: String
        package var mode: String
        package var owner: String
        /// The step-up methods the rule allows when it hits; null: no restriction.
        package var stepUp: [String]?
        /// `file:line:column`.
        package var location: String
        package var condition: String
        package var hits: Int
        package var hitsLast24h: Int
    }

    package struct ListView: Encodable, Sendable {
        package var name: String
        package var size: Int
    }

    package struct HitCountWindows: Encodable, Sendable {
        package var source = "provisioning_attempts.hits"
        package var sinceLoadFrom: Date
        package var last24hFrom: Date
    }

    package struct LastReloadView: Encodable, Sendable {
        package var at: Date
        /// `<actor> via <trigger>`.
        package var by: String
        /// `replaced`, `unchanged`, `proposed` or `failed` (its errors are in `lastFailedReload` until a
        /// later reload succeeds).
        package var result: String
        /// The version serving after it.
        package var version: String

        package init(_ record: ReloadRecord, serving: String) {
            at = record.time
            by = record.by
            result = record.result.name
            version = serving
        }
    }

    package struct ReloadView: Encodable, Sendable {
        /// `replaced`, `unchanged`, or `proposed` (approval required: `version` waits for approval,
        /// `previousVersion` keeps serving).
        package var result: String
        package var previousVersion: String
        package var version: String
        /// The change proposed (`proposed` only; absent when the version was already proposed).
        package var changeId: String?

        /// Creates the value from every stored property.
        package init(result: String, previousVersion: String, version: String, changeId: String? = nil) {
            self.result = result
            self.previousVersion = previousVersion
            self.version = version
            self.changeId = changeId
        }
    }

    package var version: String
    package var hash: String
    package var loadedAt: Date
    /// Who loaded it on the answering instance: `start-up` or `<actor> via <trigger>`.
    package var loadedBy: String
    package var files: [String]
    package var rules: [RuleView]
    package var lists: [ListView]
    package var velocityQueries: [String]
    package var hitCounts: HitCountWindows
    package var lastFailedReload: RulesetFailureView?
    /// The answering instance's most recent reload, whatever its result; null before the first.
    package var lastReload: LastReloadView?
    package var reload: ReloadView?

    /// The longest look-back for "since load" counts: bounds the scan of a long-lived ruleset.
    package static let sinceLoadLimit: TimeInterval = 30 * 86_400

    /// Builds the view of `status`, counting hits in the database `connection` is on (outside
    /// any transaction). The roll-up is brought up to date first, on `rollUp` when given (the
    /// primary, when `connection` is the analysts' read database), else on `connection`.
    package static func build(
        _ status: ActiveRulesetStatus, now: Date, connection: PostgresConnection, rollUp: PostgresPool? = nil
    ) throws -> RulesetStatusView {
        let ruleset = status.ruleset
        let dayAgo = now.addingTimeInterval(-86_400)
        let sinceLoad = max(status.loadedAt, now.addingTimeInterval(-sinceLoadLimit))
        // Read through the console's hourly roll-up (ConsoleRollup): whole hours from the roll-up,
        // the edges from provisioning_attempts, so a 30-day look-back reads a few thousand rows.
        if let rollUp {
            _ = try ConsoleRollup.catchUp(now: now, database: rollUp)
        } else {
            _ = try ConsoleRollup.catchUp(now: now, connection: connection)
        }
        let (sinceLoadCounts, lastDayCounts) = try connection.transaction(isolation: .repeatableRead) { connection in
            let coverage = try ConsoleRollup.coverage(now: now, connection: connection)
            return (
                try ConsoleRollup.hitCounts(
                    since: sinceLoad, until: now, version: ruleset.version, coverage: coverage, connection: connection),
                try ConsoleRollup.hitCounts(
                    since: dayAgo, until: now, version: nil, coverage: coverage, connection: connection)
            )
        }
        var counts: [String: (sinceLoad: Int, lastDay: Int)] = [:]
        for rule in Set(sinceLoadCounts.keys).union(lastDayCounts.keys) {
            counts[rule] = (sinceLoadCounts[rule] ?? 0, lastDayCounts[rule] ?? 0)
        }
        return RulesetStatusView(
            version: ruleset.version, hash: ruleset.version, loadedAt: status.loadedAt, loadedBy: status.loadedBy,
            files: ruleset.files,
            rules: ruleset.rules.map { rule in
                RuleView(
                    id: rule.id, title: rule.title, outcome: rule.outcome.description, reason: rule.reason,
                    mode: rule.mode.rawValue,
                    owner: rule.owner, stepUp: rule.stepUp?.methodNames, location: rule.location.description,
                    condition: rule.conditionText,
                    hits: counts[rule.id]?.sinceLoad ?? 0, hitsLast24h: counts[rule.id]?.lastDay ?? 0)
            },
            lists: ruleset.listSizes.sorted { $0.key < $1.key }.map { ListView(name: $0.key, size: $0.value) },
            velocityQueries: ruleset.velocityQueries.map(\.description),
            hitCounts: HitCountWindows(sinceLoadFrom: sinceLoad, last24hFrom: dayAgo),
            lastFailedReload: status.lastFailure.map(RulesetFailureView.init),
            lastReload: status.lastReload.map { LastReloadView($0, serving: ruleset.version) })
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(hash, forKey: .hash)
        try container.encode(loadedAt, forKey: .loadedAt)
        try container.encode(loadedBy, forKey: .loadedBy)
        try container.encode(files, forKey: .files)
        try container.encode(rules, forKey: .rules)
        try container.encode(lists, forKey: .lists)
        try container.encode(velocityQueries, forKey: .velocityQueries)
        try container.encode(hitCounts, forKey: .hitCounts)
        // Explicit null: "no failed reload" is an answer, not a missing field.
        try container.encode(lastFailedReload, forKey: .lastFailedReload)
        try container.encode(lastReload, forKey: .lastReload)
        try container.encodeIfPresent(reload, forKey: .reload)
    }

    private enum CodingKeys: String, CodingKey {
        case version, hash, loadedAt, loadedBy, files, rules, lists, velocityQueries, hitCounts, lastFailedReload,
            lastReload, reload
    }
}

/// A refused ruleset: the failed reload in `GET /v1/admin/rules`, and the `diagnostics` of a
/// 422 `ruleset_invalid`.
package struct RulesetFailureView: Encodable, Sendable {
    package struct DiagnosticView: Encodable, Sendable {
        package var file: String
        package var line: Int
        package var column: Int
        package var message: String
        package var expected: String?
        package var suggestion: String?
        /// `file:line:column: message …` as `issuerd rules check` prints it.
        package var text: String

        package init(_ diagnostic: RuleDiagnostic) {
            file = diagnostic.location.file
            line = diagnostic.location.line
            column = diagnostic.location.column
            message = diagnostic.message
            expected = diagnostic.expected
            suggestion = diagnostic.suggestion
            text = diagnostic.description
        }
    }

    package var at: Date
    /// The first positioned error (or the reason the directory could not be read).
    package var error: String
    /// Every error, one per line.
    package var message: String
    package var diagnostics: [DiagnosticView]

    package init(_ failure: ReloadFailure) {
        self.init(at: failure.time, message: failure.message, diagnostics: failure.diagnostics)
    }

    /// A refused candidate (at most 100 diagnostics are listed; `message` has them all).
    package init(at time: Date, message: String, diagnostics: [RuleDiagnostic]) {
        at = time
        error = diagnostics.first?.description ?? message
        self.message = message
        self.diagnostics = diagnostics.prefix(100).map(DiagnosticView.init)
    }
}
