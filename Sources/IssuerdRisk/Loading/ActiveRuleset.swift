import Foundation
import IssuerdCore

/// The ruleset serving requests, swapped atomically on reload.
///
/// A reload compiles outside the lock and swaps in one step, so an evaluation sees either
/// the old ruleset or the new one, never a mix. A failed reload keeps the last good ruleset
/// serving and is remembered until the next successful one (for `/readyz`, metrics, the log).
public final class ActiveRuleset: Sendable {
    // Guarded by Lock: the serving ruleset and the reload bookkeeping change together.
    fileprivate let state: Lock<ActiveRulesetStatus>

    /// Starts serving `ruleset`.
    public init(_ ruleset: Ruleset, loadedAt: Date = Date(), loadedBy: String = "start-up") {
        state = Lock(
            ActiveRulesetStatus(
                ruleset: ruleset, loadedAt: loadedAt, loadedBy: loadedBy, lastFailure: nil, lastReload: nil))
    }

    /// The ruleset to evaluate a request with; take it once per request.
    public var current: Ruleset { state.withLock { $0.ruleset } }

    /// The serving version, when it was loaded, and the last failed reload (if the latest
    /// attempt failed).
    public var status: ActiveRulesetStatus { state.withLock { $0 } }

    /// Reloads from `loader`'s directory, on behalf of `by` (kept as the serving version's
    /// loader when it replaces it, and in ``ActiveRulesetStatus/lastReload``). A version whose
    /// examples fail is refused like one that does not compile (``TestedRuleset``).
    public func reload(from loader: RulesetLoader, now: Date = Date(), by: String = "reload") -> ReloadResult {
        reload(now: now, by: by) { () throws(RulesetError) -> Ruleset in try loader.loadTested().ruleset }
    }

    /// Reloads with `load`, which compiles a candidate ruleset.
    ///
    /// - Returns: ``ReloadResult/replaced(previous:current:)``, ``ReloadResult/unchanged(version:)``
    ///   when the content hash is the same, or ``ReloadResult/failed(_:)`` (the old ruleset keeps serving).
    public func reload(
        now: Date = Date(), by: String = "reload", _ load: () throws(RulesetError) -> Ruleset
    ) -> ReloadResult {
        let candidate: Ruleset
        do {
            candidate = try load()
        } catch {
            let failure = ReloadFailure(message: error.description, time: now, diagnostics: error.diagnostics)
            state.withLock { status in
                status.lastFailure = failure
                status.lastReload = ReloadRecord(time: now, by: by, result: .failed(failure))
            }
            return .failed(failure)
        }
        return state.withLock { status -> ReloadResult in
            status.lastFailure = nil
            let previous = status.ruleset.version
            let result: ReloadResult
            if previous == candidate.version {
                result = .unchanged(version: previous)
            } else {
                status.ruleset = candidate
                status.loadedAt = now
                status.loadedBy = by
                result = .replaced(previous: previous, current: candidate.version)
            }
            status.lastReload = ReloadRecord(time: now, by: by, result: result)
            return result
        }
    }
}

extension ActiveRuleset {
    /// Records a reload whose new version was proposed for approval instead of served: the
    /// serving ruleset stays, and the reload is a success (any earlier failure is cleared).
    public func recordProposal(of version: String, now: Date = Date(), by: String) -> ReloadResult {
        state.withLock { status -> ReloadResult in
            status.lastFailure = nil
            let result = ReloadResult.proposed(serving: status.ruleset.version, proposed: version)
            status.lastReload = ReloadRecord(time: now, by: by, result: result)
            return result
        }
    }
}

/// What ``ActiveRuleset`` is serving.
public struct ActiveRulesetStatus: Sendable {
    /// The serving ruleset.
    public var ruleset: Ruleset
    /// When it was swapped in.
    public var loadedAt: Date
    /// Who swapped it in (`start-up`, or the reload's `by`), set with the swap.
    public var loadedBy: String
    /// The most recent reload's failure, nil once a reload succeeds.
    public var lastFailure: ReloadFailure?
    /// The most recent reload, whatever its result; nil before the first one.
    public var lastReload: ReloadRecord?

    /// The serving version.
    public var version: String { ruleset.version }
}

/// A reload that was refused.
public struct ReloadFailure: Sendable, Hashable {
    /// Every positioned error, one per line.
    public var message: String
    /// When the reload was attempted.
    public var time: Date
    /// The positioned errors.
    public var diagnostics: [RuleDiagnostic]
}

/// One reload: when, on whose behalf, and what came of it.
public struct ReloadRecord: Sendable, Hashable {
    public var time: Date
    public var by: String
    public var result: ReloadResult

    public init(time: Date, by: String, result: ReloadResult) {
        self.time = time
        self.by = by
        self.result = result
    }
}

/// The outcome of one reload.
public enum ReloadResult: Sendable, Hashable {
    /// A new version is serving.
    case replaced(previous: String, current: String)
    /// The files compiled to the version already serving.
    case unchanged(version: String)
    /// The candidate was refused; the previous ruleset keeps serving.
    case failed(ReloadFailure)
    /// The candidate passed and waits for approval; `serving` keeps serving.
    case proposed(serving: String, proposed: String)

    /// `replaced`, `unchanged`, `failed` or `proposed`: the metric's label and the admin views' `result`.
    public var name: String {
        switch self {
        case .replaced: "replaced"
        case .unchanged: "unchanged"
        case .failed: "failed"
        case .proposed: "proposed"
        }
    }
}
