import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// MDES Authorize Service attempts replay to their stored flows (`rules explain`, the console's
/// re-run, the backtest and the export), as the other channels' do (ReplayDecisionTests).
@Suite("MDES attempts replay to their stored decisions")
struct MDESReplayTests {
    @Test("Green, yellow, unknown card, wrong expiry, wallet declined, blocked card: every stored flow reproduced")
    func everyMDESFlow() throws {
        let rulesDirectory = try ReplayDecisionTests.rules()
        let fixture = try MDESFixture(rulesDirectory: rulesDirectory)
        try DecisionFixtures.card(
            fixture.app, "card-blocked", customer: "cust-1", pan: "5105105105105100", network: "mastercard",
            status: .blocked)
        let steps: [(String, String)] = [
            ("green", try fixture.authorizeBody(requestId: "g", tokenReference: "T-G")),
            (
                "yellow",
                try fixture.authorizeBody(
                    requestId: "y", tokenReference: "T-Y", recommendation: "REQUIRE_ADDITIONAL_AUTHENTICATION")
            ),
            (
                "unknown",
                try fixture.authorizeBody(requestId: "u", payload: MDESFixture.fundingAccount(pan: "4242424242424242"))
            ),
            ("expiry", try fixture.authorizeBody(requestId: "e", payload: MDESFixture.fundingAccount(year: "31"))),
            ("declined", try fixture.authorizeBody(requestId: "d", recommendation: "DECLINED")),
            (
                "blocked",
                try fixture.authorizeBody(requestId: "b", payload: MDESFixture.fundingAccount(pan: "5105105105105100"))
            ),
        ]
        for (name, body) in steps {
            let response = try fixture.post("authorizeService", body)
            #expect(response.status == 200, "\(name): \(response.text)")
        }
        let attempts = try ReplayDecisionTests.stored(fixture.app)
        #expect(attempts.count == steps.count)
        #expect(Set(attempts.map(\.channel)) == ["mdes"])
        #expect(Set(attempts.map(\.flow)) == ["green", "yellow", "orange"])
        let rules = Set(attempts.flatMap(\.rules))
        for rule in [
            "card_not_found", "expiry_mismatch", "invariant.wallet_declined",
            "invariant.wallet_requires_authentication",
            "card.blocked",
        ] {
            #expect(rules.contains(rule), "no stored hit of \(rule): \(rules)")
        }
        try ReplayDecisionTests.expectReproduced(fixture.app)

        for attempt in attempts {
            let explained = try CommandLineRunner.run(
                ["rules", "explain", attempt.id.uuidString.lowercased(), "--rules", rulesDirectory],
                environment: ["ISSUERD_DATABASE_URL": fixture.app.serviceConnectionString])
            #expect(explained.status == 0, "\(explained.standardError)")
            #expect(
                explained.lastLine?.hasPrefix("same outcome: \(attempt.flow)") == true, "\(explained.standardOutput)")
        }
    }
}
