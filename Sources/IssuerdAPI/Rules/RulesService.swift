import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage

/// The active ruleset of this instance: loaded at start from `ISSUERD_RULES_DIR`, swapped
/// atomically on reload (SIGHUP, `POST /v1/admin/rules/reload`, or a file change seen by the
/// ``RulesFileWatcher``), the last good one kept when a reload fails.
///
/// Every reload is counted (`issuerd_rules_reload_total{result}`), logged, and, when it
/// succeeds, written to the audit log with its trigger and actor.
final class RulesService: Sendable {
    let loader: RulesetLoader
    let active: ActiveRuleset
    private let logger: Logger
    private let database: PostgresPool?
    private let reloads: Counter?
    private let clock: @Sendable () -> Date

    /// Loads the rules directory; a bad ruleset at start-up is a start-up failure (there is no
    /// last good ruleset to keep serving).
    ///
    /// - Parameters:
    ///   - directory: The rules directory.
    ///   - logger: Where reloads are logged.
    ///   - metrics: Registers the reload metrics when given.
    ///   - database: Where successful reloads are audited when given.
    ///   - clock: The time stamped on reloads and audit entries.
    init(
        directory: String, logger: Logger, metrics: MetricsRegistry? = nil, database: PostgresPool? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        loader = RulesetLoader(path: directory, contentHasher: RulesetVersioning.sha256)
        do {
            active = ActiveRuleset(try loader.load(), loadedAt: clock())
        } catch {
            throw ConfigurationError(
                key: "ISSUERD_RULES_DIR", problem: "the rules in \(directory) do not compile: \(error)")
        }
        self.logger = logger
        self.database = database
        self.clock = clock
        reloads = metrics?.counter(
            "issuerd_rules_reload_total", help: "Rule reloads by result (replaced, unchanged, failed).",
            labels: ["result"])
        if let metrics {
            let active = self.active
            metrics.gauge(
                "issuerd_rules_last_reload_failed",
                help: "1 while the latest rule reload failed (the last good ruleset serves)."
            ) {
                [([], active.status.lastFailure == nil ? 0 : 1)]
            }
            metrics.gauge(
                "issuerd_ruleset_info", help: "The serving ruleset version (value always 1).", labels: ["version"]
            ) {
                [([active.current.version], 1)]
            }
        }
        logger.info(
            "rules loaded", ["version": .string(active.current.version), "rules": .int(active.current.rules.count)])
    }

    /// The ruleset to evaluate with right now.
    var current: Ruleset { active.current }

    /// Re-reads the directory; on failure keeps serving the last good ruleset.
    ///
    /// - Parameters:
    ///   - trigger: What asked for it (`SIGHUP`, `api`, `watcher`), for the log and the audit.
    ///   - actor: The audit actor (an API key's `apikey:<id>`, `signal`, `watcher`).
    /// - Returns: What happened; the swap itself is ``ActiveRuleset``'s.
    @discardableResult
    func reload(trigger: String, actor: String? = nil) -> ReloadResult {
        let now = clock()
        let actor = actor ?? Self.defaultActor(trigger)
        let result = active.reload(from: loader, now: now, by: "\(actor) via \(trigger)")
        reloads?.increment(labels: [result.name])
        switch result {
        case .failed(let failure):
            logger.error(
                "rules reload failed; the last good ruleset keeps serving",
                ["trigger": .string(trigger), "error": .string(failure.message)])
        case .replaced(let previous, let current):
            logger.info(
                "rules reloaded",
                ["trigger": .string(trigger), "version": .string(current), "previous": .string(previous)])
            audit(actor: actor, trigger: trigger, previous: previous, current: current, at: now)
        case .unchanged(let version):
            logger.info(
                "rules reloaded; version unchanged", ["trigger": .string(trigger), "version": .string(version)])
            audit(actor: actor, trigger: trigger, previous: version, current: version, at: now)
        }
        return result
    }

    /// `signal` for SIGHUP, the trigger's own name otherwise.
    private static func defaultActor(_ trigger: String) -> String {
        trigger == "SIGHUP" ? "signal" : trigger
    }

    /// The swap is in memory, so it cannot share a transaction with its audit entry; the entry
    /// is written right after, and a database outage is logged rather than undoing a good reload.
    private func audit(actor: String, trigger: String, previous: String, current: String, at time: Date) {
        guard let database else { return }
        do {
            try database.transaction { connection in
                try AuditLog.append(
                    actor: actor, action: "rules.reloaded", subject: "ruleset:\(current)",
                    details: ["previousVersion": previous, "version": current, "trigger": trigger], at: time,
                    connection: connection)
            }
        } catch {
            logger.error(
                "rules reload could not be audited", ["trigger": .string(trigger), "error": .string("\(error)")])
        }
    }
}
