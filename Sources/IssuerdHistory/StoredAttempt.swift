import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk

/// One stored add-card decision (`provisioning_attempts`) as `issuerd rules explain` shows it,
/// and its re-run under another ruleset.
///
/// The JSON columns are kept as the text PostgreSQL returns, so explain prints exactly what
/// was recorded, whatever its shape; only `inputs` and `features` are interpreted, to re-run.
public struct StoredAttempt: Sendable {
    /// The attempt id.
    public var id: UUID
    /// The decision time.
    public var time: Date
    /// `in_app`, `wallet_extension`, `tsp`, `mdes`, `google_pay` or `samsung_pay`.
    public var channel: String
    /// The subject whose history velocity read.
    public var subject: VelocitySubject
    /// The rule-language attributes recorded (`inputs`, restricted to known attribute names).
    public var attributesJSON: String
    /// Every recorded column that explains the decision, as JSON text.
    public var inputsJSON: String
    /// The velocity values by query description, as JSON text.
    public var featuresJSON: String
    /// Every hit with the values it read, as JSON text.
    public var hitsJSON: String
    /// The unknown values, as JSON text.
    public var unknownsJSON: String
    /// green, yellow or orange.
    public var flow: String
    /// The answer given (e.g. `APPROVED`, `DECLINED`).
    public var decision: String
    /// The step-up methods a yellow flow allowed.
    public var allowedMethods: [String]
    /// The ruleset that decided.
    public var rulesetVersion: String
    /// What the live path checked beside the rules (``RequestChecks/stored(inputs:derived:)``).
    public var checks: RequestChecks

    /// The attempt `id`, or nil when there is none.
    ///
    /// - Throws: ``PostgresError``.
    public static func load(id: UUID, connection: PostgresConnection) throws -> StoredAttempt? {
        guard
            let row = try connection.query(
                """
                SELECT a.attempt_id, a.created_at, a.channel, a.card_id, a.device_id, a.customer_id,
                       a.inputs::text AS inputs, a.features::text AS features, a.hits::text AS hits, a.unknowns::text AS unknowns,
                       a.flow, a.decision, a.allowed_methods, a.ruleset_version,
                       \(storedAttributesOf: .a) AS attributes, \(unsafeSQL: RequestChecks.legacyChecksSQL) AS legacy_checks
                FROM provisioning_attempts a WHERE a.attempt_id = \(id)
                """
            ).first
        else { return nil }
        let inputs: String = try row.decode("inputs")
        return StoredAttempt(
            id: try row.decode("attempt_id"), time: try row.decode("created_at"), channel: try row.decode("channel"),
            subject: VelocitySubject(
                cardID: try row.decode("card_id"), deviceID: try row.decode("device_id"),
                customerID: try row.decode("customer_id")),
            attributesJSON: try row.decode("attributes"), inputsJSON: inputs,
            featuresJSON: try row.decode("features"),
            hitsJSON: try row.decode("hits"), unknownsJSON: try row.decode("unknowns"), flow: try row.decode("flow"),
            decision: try row.decode("decision"), allowedMethods: try row.decode("allowed_methods"),
            rulesetVersion: try row.decode("ruleset_version"),
            checks: RequestChecks.stored(inputs: inputs, derived: try row.decode("legacy_checks")))
    }

    /// A re-run of the stored decision.
    public struct Replay: Sendable {
        /// The decision `ruleset` makes on the stored inputs, features and checks, as the live
        /// path makes it (``Ruleset/decide(_:velocity:checks:)``).
        public var decision: RiskDecision
        /// Velocity queries of `ruleset` that the stored features do not hold (re-run as unknown).
        public var missingFeatures: [String]
        /// True when the re-run's flow differs from the stored flow.
        public var differs: Bool
    }

    /// Re-runs the decision with `ruleset`, velocity taken from the stored features (not
    /// recomputed: history may have changed since), the stored checks applied as the live path
    /// applied them.
    ///
    /// - Throws: ``AttemptLogError`` when a stored attribute does not fit its type.
    public func replay(with ruleset: Ruleset) throws(AttemptLogError) -> Replay {
        let line =
            "{\"type\":\"attempt\",\"id\":\(HistoryExport.quote(id.lowercasedString)),"
            + "\"time\":\(HistoryExport.quote(HistoryExport.timestamp(time))),\"attributes\":\(attributesJSON)}"
        let log = try AttemptLog(jsonLines: line)
        // One "attempt" line without a replay flag always yields one attempt.
        let input = log.attempts.first?.input ?? RiskInput()
        let features = Self.features(featuresJSON)
        var missing: [String] = []
        let velocity = ruleset.velocityQueries.map { query -> Int? in
            guard let stored = features[query.description] else {
                missing.append(query.description)
                return nil
            }
            return stored
        }
        let decision = ruleset.decide(input, velocity: velocity, checks: checks).decision
        // An unknown card's rules do not run: no value is missing.
        return Replay(
            decision: decision, missingFeatures: checks.cardFound ? missing : [],
            differs: decision.flow.description != flow)
    }

    /// Features as `{"attempts(card, 24h)": 3, …}` or `[{"query"|"name": …, "value": …}, …]`;
    /// a null value is a recorded unknown.
    package static func features(_ json: String) -> [String: Int?] {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)) else { return [:] }
        func number(_ value: JSONValue?) -> Int?? {
            switch value {
            case .int(let number): .some(number)
            case .double(let number) where number.isFinite && number.rounded() == number && abs(number) < 1e15:
                .some(Int(number))
            case .null: .some(nil)
            default: nil
            }
        }
        var result: [String: Int?] = [:]
        switch value {
        case .object(let members):
            for (name, raw) in members { if let parsed = number(raw) { result[name] = parsed } }
        case .array(let items):
            for item in items {
                guard case .string(let name)? = item["query"] ?? item["name"], let parsed = number(item["value"]) else {
                    continue
                }
                result[name] = parsed
            }
        default: break
        }
        return result
    }
}

/// The alias a query gives `provisioning_attempts`, for SQL fragments that read its columns.
package enum AttemptsAlias: String {
    case a
}

extension PostgresQuery.StringInterpolation {
    /// A scalar subquery giving, as `jsonb` text, the rule attributes an attempt's stored
    /// `inputs` (a `json` column, sql/0018) hold: those of `inputs.attributes` when it is an
    /// object, else of `inputs` itself, only the names ``AttributeCatalog`` knows.
    ///
    /// The document is parsed into `jsonb` once (`OFFSET 0` keeps PostgreSQL from inlining the
    /// cast into each of its three uses); the text is `jsonb`'s rendering, as before the column
    /// was `json`.
    package mutating func appendInterpolation(storedAttributesOf alias: AttemptsAlias) {
        appendLiteral(
            """
            (SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}'::jsonb)::text
             FROM (SELECT \(alias.rawValue).inputs::jsonb AS doc OFFSET 0) d,
                  jsonb_each(CASE WHEN jsonb_typeof(d.doc -> 'attributes') = 'object' THEN d.doc -> 'attributes'
                                  WHEN jsonb_typeof(d.doc) = 'object' THEN d.doc ELSE '{}'::jsonb END) e
             WHERE e.key = ANY(
            """)
        appendInterpolation(AttributeCatalog.all.map(\.name))
        appendLiteral("))")
    }
}
