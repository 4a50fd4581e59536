import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage

/// Decides add-card requests with the active ruleset: builds the input, asks PostgreSQL for the
/// velocity values in one round trip, evaluates, and counts the outcome.
///
/// Recording the attempt is the caller's job (``AttemptStore``), inside its own transaction,
/// because what is stored depends on what happens after the decision (chain validation,
/// token creation).
struct RiskService: Sendable {
    let rules: RulesService
    let vault: PANVault
    private let decisions: Counter
    private let ruleHits: Counter

    /// Registers the decision metrics on `metrics`.
    init(rules: RulesService, vault: PANVault, metrics: MetricsRegistry) {
        self.rules = rules
        self.vault = vault
        decisions = metrics.counter(
            "issuerd_decisions_total", help: "Add-card decisions by channel and flow.", labels: ["channel", "flow"])
        ruleHits = metrics.counter(
            "issuerd_rule_hits_total", help: "Rule hits by rule and mode (live or shadow).", labels: ["rule", "mode"])
    }

    /// Builds the service from the application's context.
    init(context: ServiceContext) {
        self.init(rules: context.rules, vault: context.vault, metrics: context.metrics)
    }

    /// Decides `request` on `connection` (which must stay on this thread for the call).
    ///
    /// - Throws: ``PostgresError`` when the history cannot be read: a decision without its
    ///   velocity would be more permissive than the rules say.
    func assess(_ request: RiskRequest, connection: PostgresConnection) throws -> RiskAssessment {
        let ruleset = rules.current
        var request = request
        if request.cardActiveTokens == nil {
            request.cardActiveTokens = try TokenStore.activeCount(cardID: request.card.cardID, connection: connection)
        }
        let batch = velocityBatch(for: request, ruleset: ruleset)
        let velocity =
            batch.queries.isEmpty ? [] : try PostgresVelocityProvider(connection: connection).values(for: batch)
        return try assess(request, ruleset: ruleset, velocity: velocity)
    }

    /// The velocity questions `ruleset` asks about `request`, for a caller that reads the
    /// answers itself (see ``VelocitySQL``).
    func velocityBatch(for request: RiskRequest, ruleset: Ruleset) -> VelocityBatch {
        VelocityBatch(subject: request.velocitySubject, time: request.time, queries: ruleset.velocityQueries)
    }

    /// Decides `request` with `ruleset` and the answers to its ``velocityBatch(for:ruleset:)``
    /// (the same ruleset: rules may be reloaded between the two calls).
    ///
    /// The decision is ``Ruleset/decide(_:velocity:checks:)``'s, the function every replay calls:
    /// `checks` are what the caller checked beside the rules (none for in-app requests).
    func assess(
        _ request: RiskRequest, ruleset: Ruleset, velocity: [Int?], checks: RequestChecks = .none
    ) throws -> RiskAssessment {
        let input = RiskInputBuilder.input(for: request)
        let checked = ruleset.decide(input, velocity: velocity, checks: checks)
        return RiskAssessment(
            input: input, attributes: RiskInputBuilder.attributesDocument(of: input),
            features: Self.featuresDocument(ruleset.velocityDescriptions, velocity),
            decision: checked.evaluation ?? checked.decision, checked: checked,
            cardholderNameHash: try nameHash(request.card.cardholderName))
    }

    /// Counts a recorded decision (after the caller's transaction committed).
    func count(channel: String, flow: Flow, hits: [RuleHit]) {
        decisions.increment(labels: [channel, flow.description])
        for hit in hits {
            ruleHits.increment(labels: [hit.ruleID, hit.mode.rawValue])
        }
    }

    /// The velocity values by query description (``Ruleset/velocityDescriptions``, unique in a
    /// ruleset), `null` where unknown, written straight into the object's text (descriptions
    /// hold no NUL).
    static func featuresDocument(_ descriptions: [String], _ values: [Int?]) -> AttemptDocument {
        var out: [UInt8] = []
        out.reserveCapacity(64 * descriptions.count + 2)
        out.append(UInt8(ascii: "{"))
        for (description, value) in zip(descriptions, values) {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            JSONText.appendString(description, to: &out)
            out.append(UInt8(ascii: ":"))
            if let value { JSONText.appendInteger(value, to: &out) } else { out.append(contentsOf: "null".utf8) }
        }
        out.append(UInt8(ascii: "}"))
        return .written(String(decoding: out, as: UTF8.self))
    }

    /// HMAC-SHA256 of the normalised cardholder name under the fingerprint key (the `name:`
    /// prefix separates it from PAN fingerprints, which use `pan:`): `distinct_names` can count
    /// names without the database ever holding one it could be asked for.
    func nameHash(_ name: String) throws -> String {
        let key = try vault.keyRing.dataKey(for: .panFingerprint, version: vault.keyRing.fingerprintVersion)
        return BinaryEncoding.hexString(HMACSHA256.authenticationCode(for: Self.nameHashInput(name), using: key))
    }

    /// `name:` and the name lowercased, its whitespace runs collapsed to one space and trimmed:
    /// the bytes ``nameHash(_:)`` authenticates.
    ///
    /// An ASCII name (nearly every card's embossed name) is folded byte by byte; any other goes
    /// through `lowercased()` and `Character.isWhitespace`, which give the same answer for
    /// ASCII (a test holds the two together) but look up Unicode properties for every
    /// character (most of the hash's cost in `perf`).
    static func nameHashInput(_ name: String) -> [UInt8] {
        var out = Array("name:".utf8)
        out.reserveCapacity(out.count + name.utf8.count)
        var spacePending = false
        for byte in name.utf8 {
            guard byte < 0x80 else {
                return Array(
                    "name:\(name.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " "))".utf8)
            }
            if byte == 0x20 || (0x09...0x0D).contains(byte) {
                spacePending = out.count > 5  // not before the first word
                continue
            }
            if spacePending {
                out.append(0x20)
                spacePending = false
            }
            out.append((0x41...0x5A).contains(byte) ? byte | 0x20 : byte)
        }
        return out
    }
}

/// One decision with everything the attempt record stores about it.
struct RiskAssessment: Sendable {
    /// The engine input.
    var input: RiskInput
    /// The input as the attribute object stored in `inputs`.
    var attributes: AttemptDocument
    /// The velocity values by rule-language description, e.g. `attempts(card, 24h)`.
    var features: AttemptDocument
    /// The ruleset's evaluation (with no checks, the final decision too).
    var decision: RiskDecision
    /// The final decision, the request's checks applied.
    var checked: CheckedDecision
    /// See ``RiskService/nameHash(_:)``.
    var cardholderNameHash: String

    /// The live hits as the wire's reasons, most severe first.
    var reasons: [RuleHit] {
        decision.liveHits.sorted { $0.outcome > $1.outcome }
    }
}
