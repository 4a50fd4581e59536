import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdRisk
import IssuerdStorage
import Testing

@testable import IssuerdAPI

/// Hits and unresolved rules are written into the attempt straight from the decision
/// (``DecisionJSON/appendHit(_:to:)``): the text must parse to what ``DecisionJSON/hit(_:)``
/// builds, which explain, the console and the backtest read.
@Suite("Hits written straight into the attempt")
struct DecisionJSONTests {
    static let rules = """
        rule keyed_new
          title   "Keyed, young card"
          outcome yellow
          reason  KEYED_NEW
          stepup  [app, ars]
          owner   o
          when    request.source in ["manual", "camera"] and card.age < 30d
        end
        rule odd_locale
          title   "Locale"
          outcome orange
          reason  LOCALE_X
          mode    shadow
          owner   o
          when    device.locale == "ko_KR" and card.country != "US"
        end
        rule wallet_low
          title   "Low wallet score"
          outcome yellow
          reason  LOW
          owner   o
          when    wallet.device_score <= 2
        end
        rule busy
          title   "Busy card"
          outcome yellow
          reason  BUSY
          owner   o
          when    attempts(card, 24h) >= 1
        end
        """

    static func parsed(_ bytes: [UInt8]) -> JSONValue? {
        bytes.withUnsafeBufferPointer { JSONValue.parse(bytes: $0) }
    }

    @Test("Every hit and unresolved rule reads back as hit(_:) builds it")
    func sameAsBuilt() throws {
        let ruleset = try RulesetCompiler.compile(
            [RulesetFile(path: "t.rules", contents: Self.rules)], contentHasher: RulesetContent.fnv1a64)
        var input = RiskInput()
        input.source = .manual
        input.cardAge = 3 * 86_400
        input.deviceLocale = "ko_KR"
        input.cardCountry = "KR \"quoted\" \u{1}"
        input.cardStatus = CardStatus(name: "active")
        input.cardNetwork = .visa
        let decision = ruleset.evaluate(input, velocity: ruleset.velocityQueries.map { _ in 4 })
        let all = decision.hits + decision.unresolved
        #expect(decision.hits.count >= 3)
        #expect(!decision.unresolved.isEmpty)
        #expect(all.contains { $0.stepUp != nil })
        for hit in all {
            var out: [UInt8] = []
            DecisionJSON.appendHit(hit, to: &out)
            #expect(Self.parsed(out) == DecisionJSON.hit(hit), "\(String(decoding: out, as: UTF8.self))")
        }
    }

    @Test("The stored hits and facts hold the rule hits first, then the others, and the unresolved rules")
    func storedDocuments() throws {
        let ruleset = try RulesetCompiler.compile(
            [RulesetFile(path: "t.rules", contents: Self.rules)], contentHasher: RulesetContent.fnv1a64)
        var input = RiskInput()
        input.source = .camera
        input.cardAge = 86_400
        let decision = ruleset.evaluate(input, velocity: ruleset.velocityQueries.map { _ in nil })
        var record = AttemptRecord(
            attemptID: UUID(), channel: .inApp, subject: AttemptSubject(cardID: "c", customerID: "u"),
            rulesetVersion: "v", facts: ["channel": "in_app"], createdAt: Date())
        record.ruleHits = decision.hits
        record.hits = [["rule": "extra"]]
        record.flow = decision.flow
        record.decision = .approved
        record.unresolved = decision.unresolved
        let hits = try #require(Self.parsed(Array(AttemptStore.hitsJSON(record).rawJSON.utf8)))
        #expect(hits == .array(decision.hits.map(DecisionJSON.hit) + [["rule": "extra"]]))
        let facts = try #require(Self.parsed(Array(AttemptStore.factsJSON(record).rawJSON.utf8)))
        #expect(
            facts == .object(["channel": "in_app", "unresolved": .array(decision.unresolved.map(DecisionJSON.hit))]))
        record.facts = [:]
        #expect(
            Self.parsed(Array(AttemptStore.factsJSON(record).rawJSON.utf8))
                == .object(["unresolved": .array(decision.unresolved.map(DecisionJSON.hit))]))
        record.ruleHits = []
        record.unresolved = []
        #expect(Self.parsed(Array(AttemptStore.hitsJSON(record).rawJSON.utf8)) == .array([["rule": "extra"]]))
        // The rules ran and left nothing unresolved: the key is there, empty, as before.
        #expect(Self.parsed(Array(AttemptStore.factsJSON(record).rawJSON.utf8)) == .object(["unresolved": []]))
        record.unresolved = nil
        #expect(Self.parsed(Array(AttemptStore.factsJSON(record).rawJSON.utf8)) == .object([:]))
    }
}
