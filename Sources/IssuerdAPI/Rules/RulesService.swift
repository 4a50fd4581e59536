import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage

/// The active ruleset of this instance: loaded at start from `ISSUERD_RULES_DIR`, swapped
/// atomically on reload (SIGHUP, `POST /v1/admin/rules/reload`, or a file change seen by the
/// ``RulesFileWatcher``), the last good one kept when a reload fails.
///
/// Every reload compiles the files and runs their examples (``TestedRuleset``). With approval
/// required (`ISSUERD_RULES_APPROVAL=required`) a new version is proposed (``RuleChangeStore``)
/// instead of served, and every instance serves the newest approved change, which
/// ``follow()`` picks up. Every reload is counted (`issuerd_rules_reload_total{result}`), logged,
/// and audited with the person, both versions, the git commit and the rule-level diff.
final class RulesService: Sendable {
    let loader: RulesetLoader
    let active: ActiveRuleset
    /// Whether new versions wait for a second person's approval.
    let approvalRequired: Bool
    private let author: String?
    private let logger: Logger
    private let database: PostgresPool?
    private let reloads: Counter?
    private let clock: @Sendable () -> Date
    // Guarded by Lock: the approved change this instance last swapped in (or found serving).
    private let followed = Lock<UUID?>(nil)

    /// What a reload did, with the change it proposed under approval.
    struct Reload: Sendable {
        var result: ReloadResult
        var change: RuleChangeStore.Change?
    }

    /// Loads the rules directory; a bad ruleset (one that does not compile, or whose examples
    /// fail) at start-up is a start-up failure (there is no last good ruleset to keep serving).
    /// Under approval, ``startApproval()`` then puts the newest approved change in its place.
    ///
    /// - Parameters:
    ///   - directory: The rules directory.
    ///   - logger: Where reloads are logged.
    ///   - metrics: Registers the reload metrics when given.
    ///   - database: Where reloads are audited and changes kept when given.
    ///   - approvalRequired: `ISSUERD_RULES_APPROVAL=required`.
    ///   - author: `ISSUERD_RULES_AUTHOR`: who file changes are by, ahead of the git commit's author.
    ///   - clock: The time stamped on reloads and audit entries.
    init(
        directory: String, logger: Logger, metrics: MetricsRegistry? = nil, database: PostgresPool? = nil,
        approvalRequired: Bool = false, author: String? = nil, clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        let loader = RulesetLoader(path: directory, contentHasher: RulesetVersioning.sha256)
        self.loader = loader
        let tested: TestedRuleset
        do {
            tested = try loader.loadTested()
        } catch {
            throw ConfigurationError(
                key: "ISSUERD_RULES_DIR",
                problem: "the rules in \(directory) do not compile or their examples fail: \(error)")
        }
        self.logger = logger
        self.database = database
        self.clock = clock
        self.approvalRequired = approvalRequired && database != nil
        self.author = author
        active = ActiveRuleset(tested.ruleset, loadedAt: clock())
        reloads = metrics?.counter(
            "issuerd_rules_reload_total", help: "Rule reloads by result (replaced, unchanged, failed, proposed).",
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

    /// Re-reads the directory; on failure keeps serving the last good ruleset. Under approval a
    /// new version is proposed, not served.
    ///
    /// - Parameters:
    ///   - trigger: What asked for it (`SIGHUP`, `api`, `watcher`), for the log and the audit.
    ///   - actor: The audit actor (an API key's `apikey:<id>`, `signal`, `watcher`).
    ///   - person: Who made the change (an API key's name); for file changes
    ///     `ISSUERD_RULES_AUTHOR` or the git commit's author otherwise.
    /// - Returns: What happened; the swap itself is ``ActiveRuleset``'s.
    @discardableResult
    func reload(trigger: String, actor: String? = nil, person: String? = nil) -> Reload {
        let now = clock()
        let actor = actor ?? Self.defaultActor(trigger)
        let by = "\(actor) via \(trigger)"
        let previous = active.current
        var tested: TestedRuleset?
        let reload: Reload
        if approvalRequired {
            do throws(RulesetError) {
                let loaded = try loader.loadTested()
                tested = loaded
                if loaded.ruleset.version != previous.version {
                    reload = propose(loaded, trigger: trigger, actor: actor, person: person)
                } else {
                    reload = Reload(
                        result: active.reload(now: now, by: by) { () throws(RulesetError) -> Ruleset in loaded.ruleset }
                    )
                }
            } catch {
                reload = Reload(
                    result: active.reload(now: now, by: by) { () throws(RulesetError) -> Ruleset in throw error })
            }
        } else {
            reload = Reload(
                result: active.reload(now: now, by: by) { () throws(RulesetError) -> Ruleset in
                    let loaded = try loader.loadTested()
                    tested = loaded
                    return loaded.ruleset
                })
        }
        reloads?.increment(labels: [reload.result.name])
        switch reload.result {
        case .failed(let failure):
            logger.error(
                "rules reload failed; the last good ruleset keeps serving",
                ["trigger": .string(trigger), "error": .string(failure.message)])
            auditFailure(failure, previous: previous.version, actor: actor, trigger: trigger, person: person, at: now)
        case .replaced(let previousVersion, let current):
            logger.info(
                "rules reloaded",
                ["trigger": .string(trigger), "version": .string(current), "previous": .string(previousVersion)])
            audit(
                "rules.reloaded", actor: actor, trigger: trigger, person: person, previous: previous,
                current: tested?.ruleset ?? active.current, at: now)
        case .unchanged(let version):
            logger.info(
                "rules reloaded; version unchanged", ["trigger": .string(trigger), "version": .string(version)])
            audit(
                "rules.reloaded", actor: actor, trigger: trigger, person: person, previous: previous, current: previous,
                at: now)
        case .proposed(_, let proposed):
            logger.info(
                "rules proposed for approval; the serving version keeps serving",
                ["trigger": .string(trigger), "version": .string(proposed)])
        }
        return reload
    }

    /// Proposes `tested` (audited by ``RuleChangeStore``); a database failure is a failed reload.
    @discardableResult
    private func propose(_ tested: TestedRuleset, trigger: String, actor: String, person: String?) -> Reload {
        let now = clock()
        let by = "\(actor) via \(trigger)"
        guard let database else {
            return Reload(result: active.recordProposal(of: tested.ruleset.version, now: now, by: by))
        }
        let git = RulesGitCommit.read(directory: loader.directory)
        let person = person ?? author ?? git?.author ?? actor
        let previous = active.current
        do {
            let change = try database.withConnection { connection in
                try RuleChangeStore.propose(
                    tested, previous: previous, by: person, actor: actor, gitCommit: git?.commit, trigger: trigger,
                    at: now, connection: connection)
            }
            return Reload(result: active.recordProposal(of: tested.ruleset.version, now: now, by: by), change: change)
        } catch {
            logger.error("rules could not be proposed", ["trigger": .string(trigger), "error": .string("\(error)")])
            let message = "the change could not be recorded for approval: \(error)"
            return Reload(
                result: active.reload(now: now, by: by) { () throws(RulesetError) -> Ruleset in
                    throw RulesetError(code: .unreadable, diagnostics: [], detail: message)
                })
        }
    }

    /// Under approval, once the migrations ran and before requests are served: the first
    /// instance records the version it started with as the first approved change; the newest
    /// approved change serves; a directory holding another version proposes it.
    ///
    /// - Throws: ``ConfigurationError`` when the approved files do not compile or pass here.
    func startApproval() throws {
        guard approvalRequired, let database else { return }
        let tested: TestedRuleset
        do {
            tested = try loader.loadTested()
        } catch {
            throw ConfigurationError(
                key: "ISSUERD_RULES_DIR", problem: "the rules do not compile or their examples fail: \(error)")
        }
        let git = RulesGitCommit.read(directory: loader.directory)
        let now = clock()
        try database.withConnection { connection in
            try RuleChangeStore.recordBaseline(
                tested, by: author ?? git?.author ?? "start-up", gitCommit: git?.commit, at: now, connection: connection
            )
        }
        do {
            try followApproved()
        } catch {
            throw ConfigurationError(
                key: "ISSUERD_RULES_APPROVAL", problem: "the approved rules cannot serve here: \(error)")
        }
        if tested.ruleset.version != active.current.version {
            propose(tested, trigger: "start-up", actor: "start-up", person: nil)
        }
    }

    /// Under approval: serves the newest approved change when it is not what serves here
    /// (another instance, the command line or the console approved it). Called on every poll
    /// of the ``RulesFileWatcher``, and right after an approval on this instance.
    func follow() {
        do {
            try followApproved()
        } catch {
            logger.warning("the approved rules could not be served", ["error": .string("\(error)")])
        }
    }

    private func followApproved() throws {
        guard approvalRequired, let database else { return }
        do {
            guard let approved = try database.withConnection({ try RuleChangeStore.serving(connection: $0) }) else {
                return
            }
            if followed.withLock({ $0 == approved.changeID }) { return }
            defer { followed.withLock { $0 = approved.changeID } }
            guard approved.version != active.current.version else { return }
            let files = try database.withConnection { try RuleChangeStore.files(of: approved.changeID, connection: $0) }
            let tested = try TestedRuleset(files: files, contentHasher: loader.contentHasher)
            let previous = active.current
            let now = clock()
            let person = approved.decidedBy ?? "approval"
            let result = active.reload(now: now, by: "\(person) via approval") { () throws(RulesetError) -> Ruleset in
                tested.ruleset
            }
            reloads?.increment(labels: [result.name])
            logger.info(
                "approved rules now serving",
                ["version": .string(tested.ruleset.version), "previous": .string(previous.version)])
            audit(
                "rules.reloaded", actor: "approval", trigger: "approval", person: person, previous: previous,
                current: tested.ruleset, at: now)
        }
    }

    /// `signal` for SIGHUP, the trigger's own name otherwise.
    private static func defaultActor(_ trigger: String) -> String {
        trigger == "SIGHUP" ? "signal" : trigger
    }

    /// Who a reload is by: the caller's person, else `ISSUERD_RULES_AUTHOR`, else the git
    /// commit's author, else the actor.
    private func person(_ person: String?, actor: String, git: RulesGitCommit?) -> String {
        person ?? author ?? git?.author ?? actor
    }

    /// The swap is in memory, so it cannot share a transaction with its audit entry; the entry
    /// is written right after, and a database outage is logged rather than undoing a good reload.
    private func audit(
        _ action: String, actor: String, trigger: String, person: String?, previous: Ruleset, current: Ruleset,
        at time: Date
    ) {
        guard database != nil else { return }
        let git = RulesGitCommit.read(directory: loader.directory)
        let details = RulesAudit.details(
            person: self.person(person, actor: actor, git: git), previous: previous.version,
            version: current.version, gitCommit: git?.commit, diff: RulesetDiff.between(previous, current),
            trigger: trigger)
        write(action, actor: actor, version: current.version, details: details, trigger: trigger, at: time)
    }

    /// A refused reload: the error, the failing examples, and the version of the refused files
    /// when they could be read.
    private func auditFailure(
        _ failure: ReloadFailure, previous: String, actor: String, trigger: String, person: String?, at time: Date
    ) {
        guard let database else { return }
        let git = RulesGitCommit.read(directory: loader.directory)
        let files = try? loader.files()
        let version = files.map { RulesetLoader.version(of: $0, hasher: loader.contentHasher) } ?? "unreadable"
        let who = self.person(person, actor: actor, git: git)
        var details = RulesAudit.details(
            person: who, previous: previous, version: version, gitCommit: git?.commit, diff: [], trigger: trigger)
        details["error"] = String((failure.diagnostics.first?.description ?? failure.message).prefix(500))
        let examples = failure.diagnostics.filter { $0.message.hasPrefix("example \"") }.map(\.location.description)
        if !examples.isEmpty { details["failedExamples"] = examples.joined(separator: ", ") }
        write("rules.reload_failed", actor: actor, version: version, details: details, trigger: trigger, at: time)
        if approvalRequired, let files {
            do {
                try database.withConnection { connection in
                    try RuleChangeStore.recordFailure(
                        files: files, version: version, previous: previous,
                        errors: failure.diagnostics.map(\.description), by: who, gitCommit: git?.commit, at: time,
                        connection: connection)
                }
            } catch {
                logger.error("a refused rules change could not be recorded", ["error": .string("\(error)")])
            }
        }
    }

    private func write(
        _ action: String, actor: String, version: String, details: [String: String], trigger: String, at time: Date
    ) {
        guard let database else { return }
        do {
            try database.transaction { connection in
                try AuditLog.append(
                    actor: actor, action: action, subject: "ruleset:\(version)", details: details, at: time,
                    connection: connection)
            }
        } catch {
            logger.error(
                "rules reload could not be audited", ["trigger": .string(trigger), "error": .string("\(error)")])
        }
    }
}

extension RulesetLoader {
    /// The version `files` compile to (the content hash), whether or not they compile.
    static func version(of files: [RulesetFile], hasher: ContentHasher) -> String {
        hasher(RulesetContent.canonicalBytes(of: files))
    }
}
