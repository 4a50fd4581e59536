import Foundation
import IssuerdRisk
import Testing

/// What a decision must contain: every hit, the invariants, shadow rules that never decide,
/// unknowns recorded, and step-up restrictions that intersect.
struct EngineSemanticsTests {
    @Test func everyRuleIsEvaluatedAndEveryHitReturnedWithTheValuesItRead() throws {
        let ruleset = try compileRules(
            rule("low_device", when: "wallet.device_score <= 2")
                + rule("low_account", outcome: "orange", when: "wallet.account_score == 1 and card.country == \"US\"")
                + rule("new_card", when: "card.age < 30d")
        )
        var input = cleanInput()
        input.walletDeviceScore = 1
        input.walletAccountScore = 1
        input.cardCountry = "US"
        input.cardAge = 3 * 86_400
        let decision = ruleset.evaluate(input, velocity: [])
        #expect(decision.flow == .orange)
        #expect(decision.hits.map(\.ruleID) == ["low_device", "low_account", "new_card"])
        #expect(
            decision.hits[1].values == [
                RuleValue(name: "wallet.account_score", value: .number(1)),
                RuleValue(name: "card.country", value: .string("US")),
            ])
        #expect(decision.hits[2].values.first?.description == "card.age = 72h")
        #expect(decision.reasons.first == "R")
        #expect(decision.rulesetVersion == ruleset.version)
    }

    @Test func invariantsLiveInCodeAndCannotBeOutvoted() throws {
        let ruleset = try compileRules(rule(when: "card.age < 1d"))
        var declined = cleanInput()
        declined.walletRecommendation = .decline
        #expect(ruleset.evaluate(declined, velocity: []).flow == .orange)
        #expect(ruleset.evaluate(declined, velocity: []).hits.map(\.ruleID) == [Invariants.walletDeclined])

        var stepUp = cleanInput()
        stepUp.walletRecommendation = .requireAdditionalAuthentication
        let yellow = ruleset.evaluate(stepUp, velocity: [])
        #expect(yellow.flow == .yellow)
        #expect(yellow.stepUpMethods == .all)
        #expect(yellow.hits.map(\.ruleID) == [Invariants.walletRequiresAuthentication])

        for status in [CardStatus.lost, .stolen, .closed] {
            var input = cleanInput()
            input.cardStatus = status
            let decision = ruleset.evaluate(input, velocity: [])
            #expect(decision.flow == .orange)
            #expect(decision.hits.first?.values == [RuleValue(name: "card.status", value: .string(status.name))])
        }
        var blocked = cleanInput()
        blocked.cardStatus = .blocked
        #expect(ruleset.evaluate(blocked, velocity: []).flow == .green, "blocked is policy (a rule), not an invariant")
    }

    @Test func shadowRulesAreRecordedButNeverDecide() throws {
        let ruleset = try compileRules(
            rule("shadow_orange", outcome: "orange", mode: "shadow", when: "wallet.device_score <= 3")
                + rule("shadow_restrict", stepUp: "[app]", mode: "shadow", when: "wallet.device_score <= 3")
                + rule("live_yellow", when: "wallet.device_score <= 2")
        )
        var input = cleanInput()
        input.walletDeviceScore = 3
        let green = ruleset.evaluate(input, velocity: [])
        #expect(green.flow == .green)
        #expect(green.shadowFlow == .orange)
        #expect(green.hits.map(\.mode) == [.shadow, .shadow])

        input.walletDeviceScore = 2
        let yellow = ruleset.evaluate(input, velocity: [])
        #expect(yellow.flow == .yellow)
        #expect(yellow.stepUpMethods == .all, "a shadow restriction must not narrow the live methods")
        #expect(yellow.liveHits.map(\.ruleID) == ["live_yellow"])
    }

    @Test func unknownValuesPropagateAndAreRecorded() throws {
        let ruleset = try compileRules(
            rule("a", when: "wallet.device_score <= 2")
                + rule("b", when: "wallet.device_score <= 2 or card.age < 30d")
                + rule("c", when: "wallet.device_score <= 2 and card.age < 30d")
                + rule("d", when: "not known(wallet.device_score)")
                + rule("e", when: "attempts(card, 24h) > 2")
        )
        var input = cleanInput()
        input.cardAge = 86_400
        let decision = ruleset.evaluate(input, velocity: [nil])
        #expect(decision.hits.map(\.ruleID) == ["b", "d"], "true or unknown is true; known() is never unknown")
        #expect(decision.hits[0].unknowns == ["wallet.device_score"])
        #expect(
            decision.unresolved.map(\.ruleID) == ["a", "c", "e"], "unknown conditions do not fire but are recorded")
        #expect(decision.unresolved[2].values == [RuleValue(name: "attempts(card, 24h)", value: .unknown)])
        #expect(decision.unknowns == ["attempts(card, 24h)", "wallet.device_score"])

        input.cardAge = 90 * 86_400
        let falseAndUnknown = ruleset.evaluate(input, velocity: [nil])
        #expect(!falseAndUnknown.unresolved.map(\.ruleID).contains("c"), "false and unknown is false")
        #expect(falseAndUnknown.unresolved.map(\.ruleID).contains("b"), "false or unknown is unknown")
    }

    @Test func stepUpRestrictionsIntersectAndAnEmptyIntersectionIsOrange() throws {
        let ruleset = try compileRules(
            rule("phone_changed", stepUp: "[app, email]", when: "customer.since_phone_change < 14d")
                + rule("email_changed", stepUp: "[app, sms, ars]", when: "customer.since_email_change < 14d")
                + rule("app_broken", stepUp: "[sms, email]", when: "wallet.device_score <= 2")
        )
        var input = cleanInput()
        input.sincePhoneChange = 86_400
        #expect(ruleset.evaluate(input, velocity: []).stepUpMethods == [.app, .email])
        input.sinceEmailChange = 86_400
        let both = ruleset.evaluate(input, velocity: [])
        #expect(both.flow == .yellow)
        #expect(both.stepUpMethods == [.app])

        input.walletDeviceScore = 1
        let none = ruleset.evaluate(input, velocity: [])
        #expect(none.flow == .orange)
        #expect(none.stepUpMethods == [])
        #expect(none.hits.last?.ruleID == Invariants.noStepUpMethod)
        #expect(none.hits.last?.values.count == 3)
    }

    @Test(arguments: [
        ("request.source in [\"manual\", \"camera\"]", true),
        ("request.source not in [\"manual\", \"camera\"]", false),
        ("card.age * 2 >= 20d and card.age / 1d == 10", true),
        ("wallet.device_score + wallet.account_score == 7", true),
        ("wallet.device_score / 0 > 1", false),
        ("-wallet.device_score < -2", true),
        ("has(wallet.reason_codes, \"LOW_DEVICE_SCORE\") and size(wallet.reason_codes) == 2", true),
        ("has_any(wallet.reason_codes, @codes)", true),
        ("device.ip_country != card.country", true),
        ("request.hour_utc == 13 and request.weekday_utc == 6", true),
        ("customer.phone_last4_match == false", true),
        ("wallet.recommendation == \"approve\"", true),
    ])
    func operators(_ condition: String, _ fires: Bool) throws {
        let ruleset = try compileRules(
            rule(when: condition), lists: ["codes": "type string\nDEVICE_RECENTLY_LOST\nLOW_DEVICE_SCORE\n"])
        var input = cleanInput()
        input.source = .camera
        input.cardAge = 10 * 86_400
        input.walletDeviceScore = 3
        input.walletAccountScore = 4
        input.walletReasonCodes = ["ACCOUNT_TOO_NEW", "LOW_DEVICE_SCORE"]
        input.deviceIPCountry = "FR"
        input.cardCountry = "US"
        input.phoneLast4Match = false
        input.time = Date(timeIntervalSince1970: 1_700_312_400)  // Saturday 2023-11-18 13:00:00 UTC
        let decision = ruleset.evaluate(input, velocity: [])
        #expect(decision.hits.contains { $0.ruleID == "r1" } == fires, "\(decision.hits) \(decision.unresolved)")
    }

    @Test(arguments: [1, 3, 4, 5, 63, 64, 65, 70, 130])
    func everyRuleIsReportedWhateverTheRulesetSize(_ count: Int) throws {
        let ruleset = try compileRules(
            (1...count).map { rule("r\($0)", when: "wallet.device_score <= \($0)") }.joined())
        var input = cleanInput()
        input.walletDeviceScore = Double(count / 2 + 1)
        let decision = ruleset.evaluate(input, velocity: [])
        #expect(decision.hits.map(\.ruleID) == (count / 2 + 1...count).map { "r\($0)" })
        input.walletDeviceScore = nil
        #expect(ruleset.evaluate(input, velocity: []).unresolved.filter { !$0.isInvariant }.count == count)
    }

    @Test func aVelocityListOfTheWrongLengthIsTreatedAsUnknown() throws {
        let ruleset = try compileRules(rule(when: "attempts(card, 24h) > 2"))
        let decision = ruleset.evaluate(cleanInput(), velocity: [5, 6, 7])
        #expect(decision.hits.isEmpty)
        #expect(decision.unresolved.map(\.ruleID) == ["r1"])
    }
}
