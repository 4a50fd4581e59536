/// What the live path checks of an add-card request outside the rule files, recorded with the
/// attempt (`facts.checks`) so that a replay decides as the live path did: the one decision
/// function, ``Ruleset/decide(_:velocity:checks:)``, serves the request, `issuerd rules explain`,
/// the console's re-run and every backtest.
///
/// - **Card not found** (TSP: no card has the PAN's fingerprint): orange `card_not_found`; the
///   rules are not evaluated (there is no card to read).
/// - **Expiry mismatch** (TSP: the wallet's expiry is not the card's): orange `expiry_mismatch`,
///   beside the rules' hits.
/// - **A pending yellow push** (TSP: a yellow in-app, Wallet-extension or Google Pay push of the card on the
///   device in the last 24 hours): at least yellow (`issuerd.in_app_yellow`), the push's step-up
///   methods intersected in.
/// - **Reachable methods** (TSP: the step-up methods the customer can receive): a yellow
///   decision none of whose methods the customer can receive is orange
///   (`invariant.no_step_up_method`). In-app requests are not filtered (nil).
///
/// An in-app or Wallet-extension request checks none of these: ``none``.
public struct RequestChecks: Sendable, Hashable {
    /// A yellow push that the TSP authorization follows.
    public struct PendingPush: Sendable, Hashable {
        /// The push's attempt id.
        public var attemptID: String
        /// The step-up methods the push allowed.
        public var methods: StepUpMethods

        public init(attemptID: String, methods: StepUpMethods) {
            self.attemptID = attemptID
            self.methods = methods
        }
    }

    /// False when no card matched the request.
    public var cardFound: Bool
    /// False when the request's expiry is not the card's.
    public var expiryMatches: Bool
    /// The pending yellow push, if any.
    public var pendingPush: PendingPush?
    /// The step-up methods the customer can receive; nil: not filtered.
    public var reachableMethods: StepUpMethods?

    public init(
        cardFound: Bool = true, expiryMatches: Bool = true, pendingPush: PendingPush? = nil,
        reachableMethods: StepUpMethods? = nil
    ) {
        self.cardFound = cardFound
        self.expiryMatches = expiryMatches
        self.pendingPush = pendingPush
        self.reachableMethods = reachableMethods
    }

    /// Nothing checked beside the rules (in-app and Wallet-extension requests).
    public static let none = RequestChecks()

    /// The hit of an unknown card (and its reason code, which the TSP answer names).
    public static let cardNotFound = "card_not_found"
    /// The hit of an expiry that is not the card's.
    public static let expiryMismatch = "expiry_mismatch"
    /// The hit of a pending yellow push.
    public static let inAppStepUp = "issuerd.in_app_yellow"
    /// The reason code of ``inAppStepUp``.
    public static let inAppStepUpReason = "IN_APP_STEP_UP_REQUIRED"
    /// The reason code of a yellow decision whose methods the customer cannot receive.
    public static let noMethodLeftReason = "NO_STEP_UP_METHOD_LEFT"

    /// The hit ids the checks record, in ``Ruleset/invariantSlots`` after the invariants'.
    public static let hitIDs = [cardNotFound, expiryMismatch, inAppStepUp]

    /// The checks as stored (`facts.checks`) and exported (`checks` of an attempt line):
    /// only what differs from ``none``, e.g.
    /// `{"pendingPush":{"attemptId":"…","methods":["sms","app"]},"reachableMethods":["email","app"]}`.
    public var jsonText: String {
        var members: [String] = []
        if !cardFound { members.append(#""cardFound":false"#) }
        if !expiryMatches { members.append(#""expiryMatches":false"#) }
        if let push = pendingPush {
            members.append(
                #""pendingPush":{"attemptId":"# + Self.quoted(push.attemptID) + #","methods":"#
                    + Self.names(push.methods) + "}")
        }
        if let reachable = reachableMethods { members.append(#""reachableMethods":"# + Self.names(reachable)) }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// The checks of a stored or exported `checks` object; nil when it is not one (a member of
    /// the wrong type). Absent members are their ``none`` values; unknown method names are left out.
    public init?(jsonText text: String) {
        guard let value = StoredJSON.parse(text) else { return nil }
        self.init(json: value)
    }

    /// The checks of a stored attempt: its `inputs`' `checks` member when it has one (every TSP
    /// attempt since they are recorded), else `derived` (what ``legacyChecksSQL`` derives from an
    /// older attempt's stored hits), else ``none``.
    public static func stored(inputs: String, derived: String?) -> RequestChecks {
        if case .object(let members)? = StoredJSON.parse(inputs), let checks = members["checks"],
            let parsed = RequestChecks(json: checks)
        {
            return parsed
        }
        return derived.flatMap { RequestChecks(jsonText: $0) } ?? .none
    }

    /// The checks of a TSP attempt stored before they were recorded, derived from its stored
    /// hits as SQL over `provisioning_attempts` aliased `a` (the `checks` object's text, or NULL
    /// for an attempt that needs none: another channel, or no check's hit among its hits):
    ///
    /// - a `card_not_found` hit: the card was not found; an `expiry_mismatch` hit: the expiry
    ///   did not match;
    /// - an `issuerd.in_app_yellow` hit: a push was pending, its methods taken as the attempt's
    ///   `allowed_methods` (what the push left of the rules' methods, or all it allowed);
    /// - an `invariant.no_step_up_method` hit that read `allowed` (the TSP path's, not the
    ///   rules' own): the customer could receive none of the methods: taken as none at all.
    ///
    /// Otherwise the customer's reachable methods are not known: not filtered. A replay of the
    /// deciding ruleset gives the stored flow either way.
    public static let legacyChecksSQL = """
        CASE WHEN a.channel = 'tsp' AND a.hits @? '$[*].rule ? (@ == "card_not_found" || @ == "expiry_mismatch" || @ == "issuerd.in_app_yellow" || @ == "invariant.no_step_up_method")'
        THEN json_build_object(
            'cardFound', NOT a.hits @> '[{"rule":"card_not_found"}]',
            'expiryMatches', NOT a.hits @> '[{"rule":"expiry_mismatch"}]',
            'pendingPush', CASE WHEN a.hits @> '[{"rule":"issuerd.in_app_yellow"}]' THEN json_build_object(
                'attemptId', coalesce(jsonb_path_query_first(a.hits,
                    '$[*] ? (@.rule == "issuerd.in_app_yellow").values[*] ? (@.name == "pushAttemptId").value') #>> '{}', ''),
                'methods', to_json(a.allowed_methods)) END,
            'reachableMethods', CASE WHEN a.hits @> '[{"rule":"invariant.no_step_up_method","values":[{"name":"allowed"}]}]'
                THEN '[]'::json END)::text
        END
        """

    init?(json value: StoredJSON) {
        guard case .object(let members) = value else { return nil }
        self.init()
        for (name, member) in members {
            switch (name, member) {
            case ("cardFound", .bool(let flag)): cardFound = flag
            case ("expiryMatches", .bool(let flag)): expiryMatches = flag
            case ("pendingPush", .null), ("reachableMethods", .null), ("cardFound", .null), ("expiryMatches", .null):
                continue
            case ("pendingPush", .object(let push)):
                guard let methods = Self.methods(push["methods"] ?? .array([])) else { return nil }
                pendingPush = PendingPush(attemptID: push["attemptId"]?.string ?? "", methods: methods)
            case ("reachableMethods", let list):
                guard let methods = Self.methods(list) else { return nil }
                reachableMethods = methods
            case ("cardFound", _), ("expiryMatches", _), ("pendingPush", _):
                return nil
            default:
                continue  // a later member this version does not know
            }
        }
    }

    private static func methods(_ value: StoredJSON) -> StepUpMethods? {
        guard case .array(let items) = value else { return nil }
        var methods = StepUpMethods()
        for item in items {
            guard let name = item.string else { return nil }
            if let method = StepUpMethods(name: name) { methods.formUnion(method) }
        }
        return methods
    }

    private static func names(_ methods: StepUpMethods) -> String {
        "[" + methods.methodNames.map { "\"\($0)\"" }.joined(separator: ",") + "]"
    }

    /// A JSON string literal of `text` (attempt ids are UUIDs; anything else is escaped).
    private static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// A decision with the request's checks applied: what the live path answered.
public struct CheckedDecision: Sendable {
    /// The final decision: flow, step-up methods, every hit in the order the attempt stores them
    /// (a failed card or expiry check first, the rules' hits, then a pending push's and a
    /// no-method escalation's), the unresolved rules, the ruleset version.
    public let decision: RiskDecision
    /// The ruleset's own evaluation; nil when the card was not found (the rules did not run).
    public let evaluation: RiskDecision?
    /// The hit of a failed card or expiry check, which alone is the answer's reason.
    public let refusal: RuleHit?
}

extension Ruleset {
    /// Decides one request as the live path does: the ruleset's evaluation
    /// (``evaluate(_:velocity:)``) with the request's ``RequestChecks`` applied. The live TSP
    /// authorization, `issuerd rules explain`, the console's re-run and every backtest call this
    /// one function, so a replay of an unchanged ruleset gives every stored flow.
    public func decide(_ input: RiskInput, velocity: [Int?], checks: RequestChecks) -> CheckedDecision {
        guard checks.cardFound else {
            let hit = RuleHit(
                check: RequestChecks.cardNotFound, outcome: .orange, reason: RequestChecks.cardNotFound, values: [])
            return CheckedDecision(
                decision: RiskDecision(
                    flow: .orange, stepUpMethods: [], hits: [hit], unresolved: [], shadowFlow: .orange,
                    rulesetVersion: version),
                evaluation: nil, refusal: hit)
        }
        let evaluation = evaluate(input, velocity: velocity)
        if checks == .none { return CheckedDecision(decision: evaluation, evaluation: evaluation, refusal: nil) }
        guard checks.expiryMatches else {
            let hit = RuleHit(
                check: RequestChecks.expiryMismatch, outcome: .orange, reason: RequestChecks.expiryMismatch, values: [])
            return CheckedDecision(
                decision: RiskDecision(
                    flow: .orange, stepUpMethods: [], hits: [hit] + evaluation.hits, unresolved: evaluation.unresolved,
                    shadowFlow: .orange, rulesetVersion: version),
                evaluation: evaluation, refusal: hit)
        }
        var flow = evaluation.flow
        var methods = evaluation.stepUpMethods
        var hits = evaluation.hits
        if flow != .orange, let push = checks.pendingPush {
            methods = flow == .yellow ? methods.intersection(push.methods) : push.methods
            flow = .yellow
            hits.append(
                RuleHit(
                    check: RequestChecks.inAppStepUp, outcome: .yellow, reason: RequestChecks.inAppStepUpReason,
                    values: [RuleValue(name: "pushAttemptId", value: .string(push.attemptID))]))
        }
        if flow == .yellow, let reachable = checks.reachableMethods, methods.intersection(reachable).isEmpty {
            hits.append(
                RuleHit(
                    check: Invariants.noStepUpMethod, outcome: .orange, reason: RequestChecks.noMethodLeftReason,
                    values: [RuleValue(name: "allowed", value: .strings(methods.methodNames))]))
            flow = .orange
        }
        return CheckedDecision(
            decision: RiskDecision(
                flow: flow, stepUpMethods: flow == .yellow ? methods : [], hits: hits,
                unresolved: evaluation.unresolved, shadowFlow: max(evaluation.shadowFlow, flow),
                rulesetVersion: version),
            evaluation: evaluation, refusal: nil)
    }

    /// The ids of ``decide(_:velocity:checks:)``'s live hits (`decision.liveHits`), in their
    /// order, without building the decision: its hits counted once (``tally(_:velocity:checks:hits:)``)
    /// and read back in the order the decision stores them (a failed expiry check first, the
    /// invariants, the live rules, a pending push's, then a no-method escalation's).
    ///
    /// - Parameter scratch: Counters reused from one call to the next (left all zero).
    public func liveHitIDs(
        _ input: RiskInput, velocity: [Int?], checks: RequestChecks, scratch: inout [Int]
    ) -> [String] {
        let count = Self.invariantSlots.count + rules.count
        if scratch.count != count { scratch = [Int](repeating: 0, count: count) }
        return scratch.withUnsafeMutableBufferPointer {
            liveHitIDs(input, velocity: velocity, checks: checks, scratch: $0)
        }
    }

    /// ``liveHitIDs(_:velocity:checks:scratch:)`` with counters by pointer (``tallyRules(_:velocity:hits:)``
    /// says why), all zero.
    func liveHitIDs(
        _ input: RiskInput, velocity: [Int?], checks: RequestChecks, scratch: UnsafeMutableBufferPointer<Int>
    ) -> [String] {
        let slots = Self.invariantSlots.count
        _ = tally(input, velocity: velocity, checks: checks, counters: scratch)
        var ids: [String] = []
        func take(_ slot: Int, _ id: String) {
            guard scratch[slot] != 0 else { return }
            scratch[slot] = 0
            ids.append(id)
        }
        take(Self.cardNotFoundSlot, RequestChecks.cardNotFound)
        take(Self.cardNotFoundSlot + 1, RequestChecks.expiryMismatch)
        for slot in 0..<Self.noStepUpSlot { take(slot, Self.invariantSlots[slot]) }
        for (index, rule) in rules.enumerated() where scratch[slots + index] != 0 {
            scratch[slots + index] = 0
            if rule.mode == .live { ids.append(rule.id) }
        }
        take(Self.cardNotFoundSlot + 2, RequestChecks.inAppStepUp)
        take(Self.noStepUpSlot, Invariants.noStepUpMethod)
        return ids
    }

    /// What a backtest counts of ``decide(_:velocity:checks:)``'s decision, without building it
    /// (``tally(_:velocity:hits:)`` with the checks applied; their hits at their
    /// ``invariantSlots`` positions).
    public func tally(
        _ input: RiskInput, velocity: [Int?], checks: RequestChecks, hits: inout [Int]
    ) -> (flow: Flow, unresolved: Bool) {
        hits.withUnsafeMutableBufferPointer { tally(input, velocity: velocity, checks: checks, counters: $0) }
    }

    /// ``tally(_:velocity:checks:hits:)`` with counters by pointer (``tallyRules(_:velocity:hits:)``
    /// says why).
    func tally(
        _ input: RiskInput, velocity: [Int?], checks: RequestChecks, counters hits: UnsafeMutableBufferPointer<Int>
    ) -> (flow: Flow, unresolved: Bool) {
        guard checks.cardFound else {
            hits[Self.cardNotFoundSlot] += 1
            return (.orange, false)
        }
        var (flow, unresolved, methods) = tallyRules(input, velocity: velocity, hits: hits)
        if checks == .none { return (flow, unresolved) }
        guard checks.expiryMatches else {
            hits[Self.cardNotFoundSlot + 1] += 1
            return (.orange, unresolved)
        }
        if flow != .orange, let push = checks.pendingPush {
            methods = flow == .yellow ? methods.intersection(push.methods) : push.methods
            flow = .yellow
            hits[Self.cardNotFoundSlot + 2] += 1
        }
        if flow == .yellow, let reachable = checks.reachableMethods, methods.intersection(reachable).isEmpty {
            hits[Self.noStepUpSlot] += 1
            flow = .orange
        }
        return (flow, unresolved)
    }
}
