import Foundation

/// A compiled, immutable ruleset: the rules, their lists and velocity queries, and a version.
///
/// Build one with ``RulesetCompiler`` (or ``RulesetLoader`` for a directory). Evaluation is
/// pure and thread-safe: share one value across every request thread.
public struct Ruleset: Sendable {
    /// The content hash over every file of the ruleset (sorted paths and contents).
    public let version: String
    /// The rules, in file and line order.
    public let rules: [Rule]
    /// The velocity values the rules need, deduplicated; ask a ``VelocityProvider`` for them
    /// in one batch, in this order.
    public let velocityQueries: [VelocityQuery]
    /// Each velocity query's ``VelocityQuery/description``, written once (every decision
    /// records its values under these names).
    public let velocityDescriptions: [String]
    /// The number of entries in each list, by name.
    public let listSizes: [String: Int]
    /// The relative paths of the files the ruleset was built from.
    public let files: [String]

    let blocks: [ConditionBlock]
    let reads: [[ValueRead]]
    /// Each rule's shared hit header.
    let headers: [RuleHit.Header]
    /// Per block, the live rules' bits (for ``tally(_:velocity:hits:)``).
    let liveMasks: [UInt64]
    /// Per block, the orange rules' bits.
    let orangeMasks: [UInt64]
    /// Per rule, its step-up restriction (nil: none).
    let stepUps: [StepUpMethods?]

    init(
        version: String, rules: [Rule], velocityQueries: [VelocityQuery], listSizes: [String: Int], files: [String],
        conditions: [RuleCondition], reads: [[ValueRead]]
    ) {
        self.version = version
        self.rules = rules
        self.velocityQueries = velocityQueries
        self.velocityDescriptions = velocityQueries.map(\.description)
        self.listSizes = listSizes
        self.files = files
        self.blocks = ConditionBlock.blocks(conditions)
        self.reads = reads
        self.headers = zip(rules, reads).map { rule, reads in
            RuleHit.Header(
                ruleID: rule.id, outcome: rule.outcome, reason: rule.reason, mode: rule.mode, stepUp: rule.stepUp,
                valueNames: reads.map(\.name))
        }
        var live = [UInt64](repeating: 0, count: blocks.count)
        var orange = live
        for (index, rule) in rules.enumerated() {
            let bit: UInt64 = 1 << UInt64(index % ConditionBlock.width)
            if rule.mode == .live { live[index / ConditionBlock.width] |= bit }
            if rule.outcome == .orange { orange[index / ConditionBlock.width] |= bit }
        }
        liveMasks = live
        orangeMasks = orange
        stepUps = rules.map(\.stepUp)
    }

    /// Decides one request, asking `provider` for the velocity values in one batch.
    ///
    /// - Parameters:
    ///   - input: The request's attributes.
    ///   - subject: The card, device and customer whose history velocity reads.
    ///   - time: The decision time; velocity windows end just before it.
    ///   - provider: The history.
    /// - Throws: Whatever the provider throws; the caller decides whether to fail or to
    ///   evaluate with unknown velocity (``evaluate(_:velocity:)`` with nils).
    public func evaluate(
        _ input: RiskInput, subject: VelocitySubject, at time: Date, using provider: some VelocityProvider
    ) throws -> RiskDecision {
        let values =
            velocityQueries.isEmpty
            ? [] : try provider.values(for: VelocityBatch(subject: subject, time: time, queries: velocityQueries))
        return evaluate(input, velocity: values)
    }

    /// Decides one request with velocity values already fetched.
    ///
    /// - Parameters:
    ///   - input: The request's attributes.
    ///   - velocity: One value per ``velocityQueries`` entry, in order (nil: unknown). A list
    ///     of the wrong length is treated as all unknown rather than trusted.
    /// - Returns: The flow, every hit with the values it read, the unresolved rules and the version.
    public func evaluate(_ input: RiskInput, velocity: [Int?]) -> RiskDecision {
        guard velocity.count == velocityQueries.count else {
            return evaluate(input, velocity: [Int?](repeating: nil, count: velocityQueries.count))
        }
        var hits: [RuleHit] = []
        var unresolved: [RuleHit] = []
        Invariants.apply(to: input, hits: &hits, unresolved: &unresolved)
        for (blockIndex, block) in blocks.enumerated() {
            var (fired, unknown) = block.evaluate(input, velocity)
            let base = blockIndex * ConditionBlock.width
            while fired != 0 {
                hits.append(hit(base + fired.trailingZeroBitCount, input, velocity))
                fired &= fired - 1
            }
            while unknown != 0 {
                unresolved.append(hit(base + unknown.trailingZeroBitCount, input, velocity))
                unknown &= unknown - 1
            }
        }
        if hits.isEmpty {
            return RiskDecision(
                flow: .green, stepUpMethods: [], hits: hits, unresolved: unresolved, shadowFlow: .green,
                rulesetVersion: version)
        }
        let live = Self.resolve(hits, includingShadow: false)
        let shadowFlow =
            hits.contains { $0.mode == .shadow } ? Self.resolve(hits, includingShadow: true).flow : live.flow
        if let escalation = live.escalation { hits.append(escalation) }
        return RiskDecision(
            flow: live.flow, stepUpMethods: live.methods, hits: hits, unresolved: unresolved,
            shadowFlow: shadowFlow, rulesetVersion: version)
    }

    /// The positions ``tally(_:velocity:hits:)`` and ``tally(_:velocity:checks:hits:)`` count hits
    /// at: the four invariants, then the request checks' hits (``RequestChecks/hitIDs``), in
    /// this order, then rule `i` at `invariantSlots.count + i`.
    public static let invariantSlots =
        [
            Invariants.walletDeclined, Invariants.walletRequiresAuthentication, Invariants.cardUnusable,
            Invariants.noStepUpMethod,
        ] + RequestChecks.hitIDs

    /// ``invariantSlots``' position of `invariant.no_step_up_method`.
    static let noStepUpSlot = 3
    /// ``invariantSlots``' position of `card_not_found` (`expiry_mismatch` and
    /// `issuerd.in_app_yellow` follow).
    static let cardNotFoundSlot = 4

    /// What a backtest counts of ``evaluate(_:velocity:)``'s decision, without building it: adds 1
    /// to `hits` at each hit's position (``invariantSlots``; shadow hits and the
    /// `invariant.no_step_up_method` escalation included, as in the decision's `hits`).
    ///
    /// - Parameters:
    ///   - hits: At least `invariantSlots.count + rules.count` counters.
    /// - Returns: The decision's flow, and whether its `unresolved` is non-empty.
    public func tally(_ input: RiskInput, velocity: [Int?], hits: inout [Int]) -> (flow: Flow, unresolved: Bool) {
        let (flow, unresolved, _) = hits.withUnsafeMutableBufferPointer {
            tallyRules(input, velocity: velocity, hits: $0)
        }
        return (flow, unresolved)
    }

    /// ``tally(_:velocity:hits:)``, and the step-up methods a yellow flow allows (meaningless
    /// for another flow). The counters come by pointer, not `inout`: beside an `inout` argument,
    /// an input read in place (a backtest's attempts) was copied whole for the call, every string
    /// of it retained and released.
    func tallyRules(
        _ input: RiskInput, velocity: [Int?], hits: UnsafeMutableBufferPointer<Int>
    ) -> (flow: Flow, unresolved: Bool, methods: StepUpMethods) {
        precondition(hits.count >= Self.invariantSlots.count + rules.count, "a counter for every hit")
        guard velocity.count == velocityQueries.count else {
            return tallyRules(input, velocity: [Int?](repeating: nil, count: velocityQueries.count), hits: hits)
        }
        var flow = Flow.green
        var unresolved = false
        switch input.walletRecommendation {
        case .decline?:
            hits[0] += 1
            flow = .orange
        case .requireAdditionalAuthentication?:
            hits[1] += 1
            flow = max(flow, .yellow)
        case .approve?: break
        case nil: unresolved = true
        }
        switch input.cardStatus {
        case .lost?, .stolen?, .closed?:
            hits[2] += 1
            flow = .orange
        case .active?, .blocked?: break
        case nil: unresolved = true
        }
        var methods = StepUpMethods.all
        let offset = Self.invariantSlots.count
        for (blockIndex, block) in blocks.enumerated() {
            let (fired, unknown) = block.evaluate(input, velocity)
            if unknown != 0 { unresolved = true }
            guard fired != 0 else { continue }
            let base = blockIndex * ConditionBlock.width
            var bits = fired
            while bits != 0 {
                hits[offset + base + bits.trailingZeroBitCount] += 1
                bits &= bits - 1
            }
            let live = fired & liveMasks[blockIndex]
            if live & orangeMasks[blockIndex] != 0 {
                flow = .orange
            } else if live != 0, flow == .green {
                flow = .yellow
            }
            // Restrictions only count on a yellow decision; gathered anyway, they are few.
            var yellow = live & ~orangeMasks[blockIndex]
            while yellow != 0 {
                if let allowed = stepUps[base + yellow.trailingZeroBitCount] { methods.formIntersection(allowed) }
                yellow &= yellow - 1
            }
        }
        if flow == .yellow, methods.isEmpty {
            hits[Self.noStepUpSlot] += 1
            flow = .orange
        }
        return (flow, unresolved, methods)
    }

    private func hit(_ index: Int, _ input: RiskInput, _ velocity: [Int?]) -> RuleHit {
        RuleHit(header: headers[index], readValues: reads[index].map { $0.read(input, velocity) })
    }

    /// The most severe hit decides; step-up restrictions intersect; a yellow with no method
    /// left becomes orange (recorded as `invariant.no_step_up_method`).
    static func resolve(
        _ hits: [RuleHit], includingShadow: Bool
    ) -> (flow: Flow, methods: StepUpMethods, escalation: RuleHit?) {
        var flow = Flow.green
        var methods = StepUpMethods.all
        var restrictions: [RuleValue] = []
        for hit in hits where includingShadow || hit.mode == .live {
            flow = max(flow, hit.outcome)
            if hit.outcome == .yellow, let allowed = hit.stepUp {
                methods.formIntersection(allowed)
                restrictions.append(RuleValue(name: "stepup of \(hit.ruleID)", value: .strings(allowed.methodNames)))
            }
        }
        switch flow {
        case .green: return (.green, [], nil)
        case .orange: return (.orange, [], nil)
        case .yellow:
            guard methods.isEmpty else { return (.yellow, methods, nil) }
            let escalation = RuleHit(
                ruleID: Invariants.noStepUpMethod, outcome: .orange, reason: "NO_STEP_UP_METHOD_LEFT", mode: .live,
                values: restrictions)
            return (.orange, [], escalation)
        }
    }
}
