import Foundation
import IssuerdRisk
import IssuerdTestSupport
import Testing

/// `Ruleset.tally`, the backtest's counts-only evaluation, agrees with the full decision of
/// `Ruleset.evaluate`: the same flow, the same hits (by `invariantSlots` position) and the same
/// "has unresolved rules" (and `Ruleset.liveHitIDs` names its live hits, in order), over the
/// default policy and rulesets that exercise shadow rules, step-up escalation and more than one
/// 64-rule block.
struct RulesetTallyTests {
    /// An input with about one attribute in `1 / density` set to a value of its type (the
    /// rest unknown), the card and wallet usually clean, so every flow occurs.
    static func randomInput(_ random: inout SeededGenerator, density: Int) -> RiskInput {
        var input = Int.random(in: 0..<8, using: &random) == 0 ? RiskInput() : cleanInput()
        input.time = Date(timeIntervalSince1970: 1_740_000_000 + Double(Int.random(in: 0..<604_800, using: &random)))
        let texts = ["US", "GB", "FR", "en_US", "de_DE", "x", "JANE DOE"]
        for attribute in AttributeCatalog.all where Int.random(in: 0..<density, using: &random) == 0 {
            let value: RiskValue
            switch attribute.type {
            case .bool: value = .bool(Bool.random(using: &random))
            case .number: value = .number([0, 1, 2, 3, 4, 5, 10, 50, 99, 1_000].randomElement(using: &random)!)
            case .duration:
                value = .duration([0, 60, 3_600, 86_400, 864_000, 8_640_000].randomElement(using: &random)!)
            case .string: value = .string(texts.randomElement(using: &random)!)
            case .enumeration(let domain): value = .string(domain.names.randomElement(using: &random)!)
            case .stringSet: value = .strings(texts.filter { _ in Int.random(in: 0..<3, using: &random) == 0 })
            }
            _ = attribute.assign(value, to: &input)  // derived attributes refuse; they follow from the time
        }
        return input
    }

    /// Request checks, none half of the time, otherwise each check at random.
    static func randomChecks(_ random: inout SeededGenerator) -> RequestChecks {
        guard Bool.random(using: &random) else { return .none }
        func methods() -> StepUpMethods { StepUpMethods(rawValue: UInt8.random(in: 0...15, using: &random)) }
        return RequestChecks(
            cardFound: Int.random(in: 0..<10, using: &random) > 0,
            expiryMatches: Int.random(in: 0..<10, using: &random) > 0,
            pendingPush: Bool.random(using: &random) ? .init(attemptID: "push", methods: methods()) : nil,
            reachableMethods: Bool.random(using: &random) ? methods() : nil)
    }

    /// Checks `tally` against `evaluate` on `count` random inputs and velocity values, and
    /// `tally(checks:)` against `decide` with random request checks.
    static func check(_ ruleset: Ruleset, count: Int, seed: UInt64, density: Int = 2) -> (flows: [Flow: Int], hits: Int)
    {
        var random = SeededGenerator(seed: seed)
        let slots = Ruleset.invariantSlots + ruleset.rules.map(\.id)
        var flows: [Flow: Int] = [:]
        var totalHits = 0
        var scratch: [Int] = []
        for _ in 0..<count {
            let input = randomInput(&random, density: density)
            let velocity: [Int?] = ruleset.velocityQueries.map { _ in
                Int.random(in: 0..<5, using: &random) == 0 ? nil : Int.random(in: 0..<8, using: &random)
            }
            let decision = ruleset.evaluate(input, velocity: velocity)
            var expected = [Int](repeating: 0, count: slots.count)
            for hit in decision.hits { expected[slots.firstIndex(of: hit.ruleID)!] += 1 }
            var hits = [Int](repeating: 0, count: slots.count)
            let tally = ruleset.tally(input, velocity: velocity, hits: &hits)
            #expect(tally.flow == decision.flow)
            #expect(hits == expected)
            #expect(tally.unresolved == !decision.unresolved.isEmpty)
            flows[decision.flow, default: 0] += 1
            totalHits += expected.reduce(0, +)
            // The same with the request's checks applied, as the live TSP path and every replay decide.
            let checks = randomChecks(&random)
            let checked = ruleset.decide(input, velocity: velocity, checks: checks)
            var expectedChecked = [Int](repeating: 0, count: slots.count)
            for hit in checked.decision.hits { expectedChecked[slots.firstIndex(of: hit.ruleID)!] += 1 }
            var checkedHits = [Int](repeating: 0, count: slots.count)
            let checkedTally = ruleset.tally(input, velocity: velocity, checks: checks, hits: &checkedHits)
            #expect(checkedTally.flow == checked.decision.flow, "\(checks)")
            #expect(checkedHits == expectedChecked, "\(checks)")
            #expect(checkedTally.unresolved == !checked.decision.unresolved.isEmpty)
            // A changed attempt's live rules, as the export of changed attempts lists them.
            #expect(
                ruleset.liveHitIDs(input, velocity: velocity, checks: checks, scratch: &scratch)
                    == checked.decision.liveHits.map(\.ruleID), "\(checks)")
            #expect(scratch.allSatisfy { $0 == 0 })
            if checks == .none { #expect(checked.decision == decision) }
        }
        return (flows, totalHits)
    }

    @Test func theDefaultPolicyTalliesAsItDecides() throws {
        let ruleset = try RulesetLoader(
            directory: repositoryRoot.appendingPathComponent("rules"), contentHasher: RulesetContent.fnv1a64
        ).load()
        let (flows, hits) = Self.check(ruleset, count: 20_000, seed: 1, density: 12)
        // The inputs reach every flow, so the comparison covers each way a flow is decided.
        #expect(flows.count == 3, "\(flows)")
        #expect(hits > 10_000)
    }

    @Test func shadowRulesAndStepUpEscalationTallyAsTheyDecide() throws {
        let ruleset = try compileRules(
            rule("sms_only", stepUp: "[sms]", when: "wallet.device_score <= 3")
                + rule("app_only", stepUp: "[app]", when: "wallet.account_score <= 3")
                + rule("email_or_app", stepUp: "[email, app]", when: "attempts(card, 1h) >= 3")
                + rule("shadow_orange", outcome: "orange", mode: "shadow", when: "wallet.phone_score <= 2")
                + rule("shadow_yellow", mode: "shadow", when: "failed_otps(card, 24h) >= 2")
                + rule("orange", outcome: "orange", when: "attempts(device, 24h) >= 6 and wallet.device_score <= 1")
        )
        let (flows, _) = Self.check(ruleset, count: 20_000, seed: 2)
        #expect(flows.count == 3, "\(flows)")
        // The escalation (sms_only and app_only together leave no method) is among the hits compared.
        var input = RiskInput()
        input.cardStatus = .active
        input.walletRecommendation = .approve
        input.walletDeviceScore = 1
        input.walletAccountScore = 1
        var hits = [Int](repeating: 0, count: Ruleset.invariantSlots.count + ruleset.rules.count)
        let tally = ruleset.tally(input, velocity: ruleset.velocityQueries.map { _ in 0 }, hits: &hits)
        #expect(tally.flow == .orange)
        #expect(hits[Ruleset.invariantSlots.firstIndex(of: "invariant.no_step_up_method")!] == 1)
        #expect(ruleset.evaluate(input, velocity: ruleset.velocityQueries.map { _ in 0 }).flow == .orange)
    }

    @Test func moreThanOneBlockOfRulesTalliesAsItDecides() throws {
        var text = ""
        for index in 0..<150 {
            let outcome = index % 7 == 0 ? "orange" : "yellow"
            let mode = index % 5 == 0 ? "shadow" : nil
            let stepUp = index % 11 == 0 && outcome == "yellow" ? (index % 2 == 0 ? "[sms]" : "[app]") : nil
            text += rule(
                "r\(index)", outcome: outcome, stepUp: stepUp, mode: mode,
                when: "wallet.device_score <= \(index % 4) or attempts(card, \(index % 3 + 1)h) >= \(index % 9 + 8)")
        }
        let ruleset = try compileRules(text)
        let (flows, _) = Self.check(ruleset, count: 3_000, seed: 3)
        #expect(flows.count == 3, "\(flows)")
        // A wrong length is all unknown in both.
        var hits = [Int](repeating: 0, count: Ruleset.invariantSlots.count + ruleset.rules.count)
        let tally = ruleset.tally(cleanInput(), velocity: [1], hits: &hits)
        let decision = ruleset.evaluate(cleanInput(), velocity: [1])
        #expect(tally.flow == decision.flow)
        #expect(tally.unresolved == !decision.unresolved.isEmpty)
    }
}
