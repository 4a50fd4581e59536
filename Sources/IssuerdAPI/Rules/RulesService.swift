import Foundation
import IssuerdCore
import IssuerdRisk

/// The active ruleset of this instance: loaded at start from `ISSUERD_RULES_DIR`, swapped
/// atomically on reload, the last good one kept when a reload fails.
final class RulesService: Sendable {
    let loader: RulesetLoader
    let active: ActiveRuleset
    private let logger: Logger

    /// Loads the rules directory; a bad ruleset at start-up is a start-up failure (there is no
    /// last good ruleset to keep serving).
    init(directory: String, logger: Logger) throws {
        loader = RulesetLoader(path: directory, contentHasher: RulesetVersioning.sha256)
        do {
            active = ActiveRuleset(try loader.load())
        } catch {
            throw ConfigurationError(key: "ISSUERD_RULES_DIR", problem: "the rules in \(directory) do not compile: \(error)")
        }
        self.logger = logger
        logger.info("rules loaded", ["version": .string(active.current.version), "rules": .int(active.current.rules.count)])
    }

    /// The ruleset to evaluate with right now.
    var current: Ruleset { active.current }

    /// Re-reads the directory; on failure keeps serving the last good ruleset.
    @discardableResult
    func reload(trigger: String) -> ReloadResult {
        let result = active.reload(from: loader)
        switch result {
        case .failed(let failure):
            logger.error("rules reload failed; the last good ruleset keeps serving", ["trigger": .string(trigger), "error": .string(failure.message)])
        default:
            logger.info("rules reloaded", ["trigger": .string(trigger), "version": .string(active.current.version)])
        }
        return result
    }
}
