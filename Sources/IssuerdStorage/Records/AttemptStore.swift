import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdRisk

/// What an attempt decided, as `provisioning_attempts.decision` stores it and answers carry it.
package enum AttemptDecision: String, Sendable, CaseIterable {
    case approved = "APPROVED"
    case requireAdditionalAuthentication = "REQUIRE_ADDITIONAL_AUTHENTICATION"
    case declined = "DECLINED"
    /// In-app: the rules allowed the push, the wallet's certificate chain did not verify.
    case certificateChainInvalid = "CERTIFICATE_CHAIN_INVALID"

    /// What a flow decides: green approves, yellow asks for step-up, orange declines.
    package init(_ flow: Flow) {
        switch flow {
        case .green: self = .approved
        case .yellow: self = .requireAdditionalAuthentication
        case .orange: self = .declined
        }
    }
}

/// What an attempt is about, as its request names it: the card and its owner once found, the
/// device, the token and its requestor.
package struct AttemptSubject: Sendable {
    package var cardID: String?
    package var customerID: String?
    package var deviceID: String?
    package var tokenReference: String?
    package var tokenRequestorID: String?
    /// As the request spelt it (TSP) or as rules name it (MDES).
    package var tokenizationSource: String?
    package var requestID: String?

    package init(
        cardID: String? = nil, customerID: String? = nil, deviceID: String? = nil, tokenReference: String? = nil,
        tokenRequestorID: String? = nil, tokenizationSource: String? = nil, requestID: String? = nil
    ) {
        self.cardID = cardID
        self.customerID = customerID
        self.deviceID = deviceID
        self.tokenReference = tokenReference
        self.tokenRequestorID = tokenRequestorID
        self.tokenizationSource = tokenizationSource
        self.requestID = requestID
    }
}

/// One row of `provisioning_attempts`: a decision with everything needed to explain and replay it.
///
/// Made undecided (``init(attemptID:channel:subject:rulesetVersion:facts:createdAt:)``: declined,
/// orange, nothing assessed), then filled in by the decision that made it.
package struct AttemptRecord: Sendable {
    package var attemptID: UUID
    package var channel: RequestChannel
    package var cardID: String?
    package var customerID: String?
    package var deviceID: String?
    package var cardholderNameHash: String?
    package var tokenReference: String?
    package var tokenRequestorID: String?
    package var tokenizationSource: String?
    package var requestID: String?
    /// The rule attributes, in the shape `AttemptLog` reads.
    package var inputs: AttemptDocument = [:]
    /// Velocity values by rule-language description.
    package var features: AttemptDocument = [:]
    /// Every hit, live and shadow, with the values it read: `ruleHits` written as
    /// ``DecisionJSON/hit(_:)`` writes them, then `hits` (pseudo-hits, or hits already as JSON).
    package var ruleHits: [RuleHit] = []
    package var hits: [JSONValue] = []
    package var unknowns: [String] = []
    package var flow: Flow = .orange
    package var decision: AttemptDecision = .declined
    package var allowedMethods: [String] = []
    package var rulesetVersion: String
    /// Request facts for explain (never a PAN): device, wallet, chain failure, the answer sent.
    package var facts: [String: JSONValue]
    /// The rules that could not be decided, stored in `facts` as `unresolved` (a key `facts`
    /// itself must not hold), written as ``DecisionJSON/hit(_:)`` writes them; nil (no key) for
    /// an attempt refused before the rules ran.
    package var unresolved: [RuleHit]?
    package var createdAt: Date

    /// An undecided attempt about `subject`.
    package init(
        attemptID: UUID, channel: RequestChannel, subject: AttemptSubject = AttemptSubject(), rulesetVersion: String,
        facts: [String: JSONValue] = [:], createdAt: Date
    ) {
        self.attemptID = attemptID
        self.channel = channel
        cardID = subject.cardID
        customerID = subject.customerID
        deviceID = subject.deviceID
        tokenReference = subject.tokenReference
        tokenRequestorID = subject.tokenRequestorID
        tokenizationSource = subject.tokenizationSource
        requestID = subject.requestID
        self.rulesetVersion = rulesetVersion
        self.facts = facts
        self.createdAt = createdAt
    }
}

/// A JSON object for one of an attempt's `json` columns (`inputs`, `features`): its members,
/// written when the attempt is stored, or the object's text already written by the decision
/// (``RiskInputBuilder/attributesDocument(of:)``), which must hold no NUL escape.
package enum AttemptDocument: Sendable, ExpressibleByDictionaryLiteral {
    case members([String: JSONValue])
    case written(String)

    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .members(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// Reads and writes `provisioning_attempts`.
package enum AttemptStore {
    /// Inserts an attempt inside the caller's transaction.
    package static func insert(_ record: AttemptRecord, connection: PostgresConnection) throws {
        try connection.execute(insertion(record))
    }

    /// The statement that inserts `record`, for a caller that sends it in a pipeline.
    package static func insertion(_ record: AttemptRecord) -> PostgresQuery {
        """
        INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, device_id, cardholder_name_hash,
            token_reference, token_requestor_id, tokenization_source, request_id, inputs, features, hits, unknowns,
            flow, decision, allowed_methods, ruleset_version, facts, created_at)
        VALUES (\(record.attemptID), \(record.channel.name), \(record.cardID), \(record.customerID), \(record.deviceID),
            \(record.cardholderNameHash), \(record.tokenReference), \(record.tokenRequestorID), \(record.tokenizationSource),
            \(record.requestID), \(document(record.inputs)), \(document(record.features)), \(hitsJSON(record)),
            \(textJSON(JSONValue.array(record.unknowns.map(JSONValue.string)).unorderedJSONText)), \(record.flow.description), \(record.decision.rawValue), \(record.allowedMethods),
            \(record.rulesetVersion), \(factsJSON(record)), \(record.createdAt))
        """
    }

    /// The oldest push (in-app, Wallet-extension or Google Pay) of a customer, or of a card, since
    /// `since` (for `Retry-After`).
    package static func oldestRecentPush(
        column: RateLimitSubject, id: String, since: Date, connection: PostgresConnection
    ) throws -> Date? {
        try connection.query(
            """
            SELECT min(created_at) AS oldest FROM provisioning_attempts
            WHERE \(unsafeSQL: column.rawValue) = \(id) AND channel IN ('in_app', 'wallet_extension', 'google_pay', 'samsung_pay') AND created_at >= \(since)
            """
        ).first?.decode("oldest", as: Date?.self) ?? nil
    }

    /// Appends a scalar subquery naming, as `ARRAY[attempt_id, allowed_methods…]`, the newest
    /// yellow push (in-app, Wallet-extension or Google Pay) of the card in `cardColumn` (a column of the
    /// enclosing query) on `deviceID` (or with no device id) since `since` that no TSP
    /// authorization of that card and device followed yet: the push whose step-up the next
    /// authorization must enforce. NULL when there is none.
    package static func appendPendingYellowPush(
        cardColumn: String, deviceID: String?, since: Date, name: String,
        into sql: inout PostgresQuery.StringInterpolation
    ) {
        sql.appendText(
            "(SELECT ARRAY[a.attempt_id::text] || a.allowed_methods FROM provisioning_attempts a WHERE a.card_id = \(cardColumn)"
        )
        sql.appendLiteral(
            " AND a.channel IN ('in_app', 'wallet_extension', 'google_pay', 'samsung_pay') AND a.flow = 'yellow'")
        sql.appendLiteral(" AND a.decision = 'REQUIRE_ADDITIONAL_AUTHENTICATION' AND a.created_at >= ")
        sql.appendInterpolation(since)
        sql.appendLiteral(" AND (a.device_id IS NULL OR ")
        sql.appendInterpolation(deviceID)
        sql.appendLiteral("::text IS NULL OR a.device_id = ")
        sql.appendInterpolation(deviceID)
        sql.appendLiteral(
            ") AND NOT EXISTS (SELECT 1 FROM provisioning_attempts t WHERE t.channel = 'tsp' AND t.card_id = a.card_id")
        sql.appendLiteral(" AND t.created_at > a.created_at AND (a.device_id IS NULL OR t.device_id = a.device_id))")
        sql.appendText(" ORDER BY a.created_at DESC LIMIT 1) AS \(name)")
    }

    /// The whole stored attempt as JSON for `GET /v1/admin/attempts/{attemptId}`, or nil.
    package static func find(_ attemptID: UUID, connection: PostgresConnection) throws -> [String: JSONValue]? {
        guard
            let row = try connection.query(
                """
                SELECT attempt_id, channel, card_id, customer_id, device_id, token_reference, token_requestor_id,
                       tokenization_source, request_id, inputs, features, hits, unknowns, flow, decision, allowed_methods,
                       ruleset_version, facts, created_at
                FROM provisioning_attempts WHERE attempt_id = \(attemptID)
                """
            ).first
        else { return nil }
        func text(_ column: String) throws -> JSONValue {
            (try row.decode(column, as: String?.self)).map(JSONValue.string) ?? .null
        }
        let created: Date = try row.decode("created_at")
        return [
            "attemptId": .string(try row.decode("attempt_id", as: UUID.self).lowercasedString),
            "channel": try text("channel"), "cardId": try text("card_id"), "customerId": try text("customer_id"),
            "deviceId": try text("device_id"), "tokenReference": try text("token_reference"),
            "tokenRequestorId": try text("token_requestor_id"), "tokenizationSource": try text("tokenization_source"),
            "requestId": try text("request_id"),
            "inputs": try decode(try row.decode("inputs")), "features": try decode(try row.decode("features")),
            "hits": try decode(try row.decode("hits")), "unknowns": try decode(try row.decode("unknowns")),
            "flow": try text("flow"), "decision": try text("decision"),
            "allowedMethods": .array(try row.decode("allowed_methods", as: [String].self).map(JSONValue.string)),
            "rulesetVersion": try text("ruleset_version"), "facts": try decode(try row.decode("facts")),
            "createdAt": .string(ISO8601DateFormatter().string(from: created)),
        ]
    }

    /// The `hits` array: the rule hits written straight from the decision, then the rest.
    package static func hitsJSON(_ record: AttemptRecord) -> PostgresJSON {
        var out: [UInt8] = []
        out.reserveCapacity(256 * (record.ruleHits.count + record.hits.count) + 2)
        out.append(UInt8(ascii: "["))
        for (index, hit) in record.ruleHits.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            DecisionJSON.appendHit(hit, to: &out)
        }
        for (index, hit) in record.hits.enumerated() {
            if index > 0 || !record.ruleHits.isEmpty { out.append(UInt8(ascii: ",")) }
            hit.appendJSON(to: &out, sortedKeys: false)
        }
        out.append(UInt8(ascii: "]"))
        return PostgresJSON(rawJSON: String(decoding: out, as: UTF8.self))
    }

    /// The `facts` object, with `unresolved` (when the rules ran, `[]` if none) written straight
    /// from the decision: a `json` column (sql/0019), like `unknowns`.
    package static func factsJSON(_ record: AttemptRecord) -> PostgresTextJSON {
        guard let unresolved = record.unresolved else {
            return textJSON(JSONValue.object(record.facts).unorderedJSONText)
        }
        var out: [UInt8] = []
        out.reserveCapacity(512 + 256 * unresolved.count)
        JSONValue.object(record.facts).appendJSON(to: &out, sortedKeys: false)
        out.removeLast()  // the closing brace
        if !record.facts.isEmpty { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: #""unresolved":["#.utf8)
        for (index, hit) in unresolved.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            DecisionJSON.appendHit(hit, to: &out)
        }
        out.append(contentsOf: "]}".utf8)
        return textJSON(String(decoding: out, as: UTF8.self))
    }

    /// JSON text for a `json` column (`facts`, `unknowns`): as written, unless it holds an
    /// escaped NUL, which `json` would take and every later `->>` or `::jsonb` read of the row
    /// refuse (`jsonb` refused the insert): then parsed and written again with each NUL as
    /// U+FFFD, as ``document(_:)`` does. No decision writes one today.
    package static func textJSON(_ text: String) -> PostgresTextJSON {
        guard text.containsUTF8(nulEscape), let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        else {
            return PostgresTextJSON(rawJSON: text)
        }
        return PostgresTextJSON(rawJSON: value.replacingNUL.unorderedJSONText)
    }

    /// The inputs and features, `json` columns (sql/0018) kept as written: unsorted, like the
    /// `jsonb` columns (sorting the keys was 1–2 % of a provisioning request's CPU in `perf`,
    /// and nothing reads the text's order: every reader parses it).
    ///
    /// `json` accepts `\u0000`, which `jsonb` and `text` cannot hold: one such row would make
    /// every `->>` and `::jsonb` read of it fail (the roll-up, explain, the export). No input
    /// that reaches a decision carries a NUL today; one that did is stored as U+FFFD.
    package static func document(_ document: AttemptDocument) -> PostgresTextJSON {
        let members: [String: JSONValue]
        switch document {
        case .written(let text): return PostgresTextJSON(rawJSON: text)
        case .members(let object): members = object
        }
        let text = JSONValue.object(members).unorderedJSONText
        // Over the bytes: `String.contains` compares characters, grapheme by grapheme, on every decision.
        guard text.containsUTF8(nulEscape) else { return PostgresTextJSON(rawJSON: text) }
        return PostgresTextJSON(rawJSON: JSONValue.object(members).replacingNUL.unorderedJSONText)
    }

    /// How the writer escapes a NUL (`JSONText.appendString`).
    package static let nulEscape = Array("\\u0000".utf8)

    package static func decode(_ value: PostgresJSON) throws -> JSONValue {
        try value.decode(JSONValue.self)
    }
}

/// The column a provisioning rate limit counts by.
package enum RateLimitSubject: String, Sendable {
    case customer = "customer_id"
    case card = "card_id"
}

extension JSONValue {
    /// This value with every NUL in its strings and keys replaced by U+FFFD.
    fileprivate var replacingNUL: JSONValue {
        func clean(_ text: String) -> String { text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") }
        switch self {
        case .null, .bool, .int, .double: return self
        case .string(let text): return .string(clean(text))
        case .array(let items): return .array(items.map(\.replacingNUL))
        case .object(let members):
            return .object(
                Dictionary(
                    members.map { (clean($0.key), $0.value.replacingNUL) }, uniquingKeysWith: { first, _ in first }))
        }
    }
}
