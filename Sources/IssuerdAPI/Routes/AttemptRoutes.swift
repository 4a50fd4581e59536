import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdHistory
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage

/// `GET /v1/admin/attempts/{attemptId}` (analyst or admin): the whole decision of one attempt,
/// with the step-up history of the token it created, if any, the card's last four digits, and the
/// decision re-run with the serving rules (`replay`, as `issuerd rules explain` does), and what
/// became of it: the current `outcome` and every report kept (`outcomes`, newest first).
enum AttemptRoutes {
    static func register(in table: inout RouteTable, context: ServiceContext) {
        table.add(.get, "/v1/admin/attempts/{attemptId}") { request in
            _ = try context.apiKeys.authenticate(request, roles: [.analyst, .admin], consoleSession: true)
            guard let text = request.pathParameters["attemptId"], text.utf8.count == 36,
                let attemptID = UUID(uuidString: text)
            else {
                throw DecisionErrors.attemptNotFound()
            }
            // An analyst's read: on the read database when one is set.
            let body = try context.analystRead {
                try context.reads.withConnection { connection in
                    try detail(attemptID, context: context, connection: connection)
                }
            }
            guard let body else { throw DecisionErrors.attemptNotFound() }
            return try .json(JSONValue.object(body))
        }
    }

    /// The attempt as the route answers it (a review case shows it too); nil when unknown.
    static func detail(
        _ attemptID: UUID, context: ServiceContext, connection: PostgresConnection
    ) throws -> [String: JSONValue]? {
        guard var attempt = try AttemptStore.find(attemptID, connection: connection) else { return nil }
        attempt["facts"] = attempt["facts"].map(onlyLastFour)
        attempt["hits"] = attempt["hits"].map(withoutBIN)
        attempt["token"] = try token(of: attemptID, connection: connection)
        attempt["lastFour"] = try lastFour(of: attempt["cardId"], connection: connection)
        attempt["replay"] = try replay(attemptID, with: context.rules.current, connection: connection)
        attempt["stepUp"] = .array(try challenges(of: attemptID, connection: connection))
        let outcomes = try OutcomeStore.history(of: attemptID, connection: connection)
        attempt["outcome"] = outcomes.first(where: \.isCurrent).map(OutcomeRoutes.json) ?? .null
        attempt["outcomes"] = .array(outcomes.map(OutcomeRoutes.json))
        return attempt
    }

    /// Facts with no more of the card than its last four digits. TSP attempts stored before
    /// 2026-12-02 kept the PAN masked to its BIN and last four, and the card's expiry: shown
    /// here as their last four only.
    static func onlyLastFour(_ facts: JSONValue) -> JSONValue {
        guard case .object(var members) = facts else { return facts }
        if case .string(let masked)? = members.removeValue(forKey: "panMasked"), members["lastFour"] == nil {
            members["lastFour"] = .string(String(masked.suffix(4)))
        }
        members["expiration"] = nil
        return .object(members)
    }

    /// Hits without the `card.bin` value that TSP attempts for an unknown card recorded before
    /// 2026-12-02 (with the facts' last four it made the first-six-last-four masked PAN).
    static func withoutBIN(_ hits: JSONValue) -> JSONValue {
        guard case .array(let items) = hits else { return hits }
        return .array(
            items.map { hit in
                guard case .object(var members) = hit, case .array(let values)? = members["values"] else { return hit }
                members["values"] = .array(
                    values.filter { value in
                        guard case .object(let pair) = value, case .string("card.bin")? = pair["name"] else {
                            return true
                        }
                        return false
                    })
                return .object(members)
            })
    }

    /// The decision re-run with the serving ruleset, velocity as stored, as `issuerd rules explain`
    /// prints it; null when the stored inputs cannot be re-run.
    private static func replay(
        _ attemptID: UUID, with ruleset: Ruleset, connection: PostgresConnection
    ) throws -> JSONValue {
        guard let stored = try StoredAttempt.load(id: attemptID, connection: connection),
            let replay = try? stored.replay(with: ruleset)
        else { return .null }
        return [
            "rulesetVersion": .string(ruleset.version), "flow": .string(replay.decision.flow.description),
            "differs": .bool(replay.differs), "hits": .array(replay.decision.hits.map(DecisionJSON.hit)),
            "missingFeatures": .array(replay.missingFeatures.map(JSONValue.string)),
        ]
    }

    /// The last four digits of the attempt's card (never more of the PAN), if it is known.
    private static func lastFour(of cardID: JSONValue?, connection: PostgresConnection) throws -> JSONValue {
        guard case .string(let id)? = cardID, let lastFour = try CardStore.lastFour(id, connection: connection)
        else { return .null }
        return .string(lastFour)
    }

    /// The token this attempt created, if any.
    private static func token(of attemptID: UUID, connection: PostgresConnection) throws -> JSONValue {
        guard let token = try TokenStore.created(byAttempt: attemptID, connection: connection) else { return .null }
        return ["tokenReference": .string(token.tokenReference), "status": .string(token.status)]
    }

    /// The challenges of that token, oldest first (destinations masked; never a code), each with
    /// its message's delivery state.
    private static func challenges(of attemptID: UUID, connection: PostgresConnection) throws -> [JSONValue] {
        let formatter = ISO8601DateFormatter()
        return try connection.query(
            """
            SELECT c.challenge_id, c.method, c.destination_masked, c.status, c.failed_attempts, c.created_at, c.verified_at,
                   d.state AS delivery_state, d.provider AS delivery_provider, d.message_id AS delivery_message_id,
                   d.detail AS delivery_detail, d.updated_at AS delivery_updated_at
            FROM challenges c JOIN tokens t ON t.token_reference = c.token_reference
            LEFT JOIN challenge_deliveries d ON d.challenge_id = c.challenge_id
            WHERE t.attempt_id = \(attemptID) ORDER BY c.created_at
            """
        ).map { row in
            let verified: Date? = try row.decode("verified_at")
            // What became of the code's message (absent for the app method and for challenges
            // older than delivery tracking).
            var delivery = JSONValue.null
            if let state: String = try row.decode("delivery_state") {
                let provider: String? = try row.decode("delivery_provider")
                let messageID: String? = try row.decode("delivery_message_id")
                let detail: String? = try row.decode("delivery_detail")
                let updated: Date? = try row.decode("delivery_updated_at")
                delivery = [
                    "state": .string(state), "provider": provider.map(JSONValue.string) ?? .null,
                    "messageId": messageID.map(JSONValue.string) ?? .null,
                    "detail": detail.map(JSONValue.string) ?? .null,
                    "updatedAt": updated.map { .string(formatter.string(from: $0)) } ?? .null,
                ]
            }
            return [
                "delivery": delivery,
                "challengeId": .string(try row.decode("challenge_id", as: UUID.self).lowercasedString),
                "method": .string(try row.decode("method")),
                "destination": .string(try row.decode("destination_masked")),
                "status": .string(try row.decode("status")), "failedAttempts": .int(try row.decode("failed_attempts")),
                "createdAt": .string(formatter.string(from: try row.decode("created_at"))),
                "verifiedAt": verified.map { .string(formatter.string(from: $0)) } ?? .null,
            ]
        }
    }
}
