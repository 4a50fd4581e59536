import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Two issuerd instances on real sockets over one database, as behind a load balancer: the
/// one-time code limits are PostgreSQL's (row locks, counted rows), never an instance's memory.
/// scripts/reliability runs the same race against two `issuerd serve` processes.
@Suite("Step-up across two instances")
struct TwoInstanceStepUpTests {
    @Test("50 concurrent verifications of one code, spread over both instances: exactly one verified")
    func oneCodeOneWinner() throws {
        let first = try TestApplication()
        try withExtendedLifetime(first) {
            let second = try TestApplication(sharing: first)
            let fixture = try StepUpFixture(first)
            let created = try fixture.requestCode(second)
            #expect(created.status == 201)
            let challengeID = try #require(created.jsonObject()?["challengeId"] as? String)
            let code = try #require(StepUpFixture.loggedCode(first, challengeID: challengeID))

            let answers = Self.together(50) { index in
                let app = index % 2 == 0 ? first : second
                return try? fixture.verify(app, code: code, padding: index)
            }
            let verified = answers.filter { $0?.status == 200 && $0?.jsonObject()?["result"] as? String == "verified" }
            #expect(verified.count == 1, "\(answers.map { $0?.status ?? -1 })")
            // Every loser learns the code is spent: 409, never a 5xx, never a second activation.
            #expect(
                answers.allSatisfy { $0 != nil && ($0?.status == 200 || $0?.status == 409) },
                "\(answers.map { $0?.status ?? -1 })")
            #expect(try fixture.tokenStatus(first) == "active")
            #expect(
                try DecisionFixtures.count(
                    first, "SELECT count(*) FROM outbox WHERE kind = 'tsp' AND payload->>'action' = 'activate'") == 1)
        }
    }

    @Test("Wrong codes alternating between the instances lock the code after 5 in total")
    func lockCountsBothInstances() throws {
        let first = try TestApplication()
        try withExtendedLifetime(first) {
            let second = try TestApplication(sharing: first)
            let fixture = try StepUpFixture(first)
            let challengeID = try #require(try fixture.requestCode(first).jsonObject()?["challengeId"] as? String)
            let code = try #require(StepUpFixture.loggedCode(first, challengeID: challengeID))
            let wrong = code == "000000" ? "000001" : "000000"
            var results: [String?] = []
            for attempt in 0..<6 {
                let app = attempt % 2 == 0 ? first : second
                results.append(
                    try fixture.verify(app, code: wrong, padding: attempt).jsonObject()?["result"] as? String)
            }
            #expect(results == ["invalid", "invalid", "invalid", "invalid", "locked", "locked"])
            // The right code no longer helps, on either instance.
            #expect(try fixture.verify(second, code: code, padding: 10).jsonObject()?["result"] as? String == "locked")
            #expect(try fixture.verify(first, code: code, padding: 11).jsonObject()?["result"] as? String == "locked")
            #expect(try fixture.tokenStatus(first) == "pending_verification")
        }
    }

    @Test("The hourly send limit holds across instances, also for concurrent requests")
    func sendLimitAcrossInstances() throws {
        let first = try TestApplication(environment: ["ISSUERD_OTP_MAX_SENDS_PER_HOUR": "3"])
        try withExtendedLifetime(first) {
            let second = try TestApplication(environment: ["ISSUERD_OTP_MAX_SENDS_PER_HOUR": "3"], sharing: first)
            let fixture = try StepUpFixture(first)
            let answers = Self.together(8) { index in
                try? fixture.requestCode(index % 2 == 0 ? first : second, padding: index)
            }
            let statuses = answers.map { $0?.status ?? -1 }
            #expect(statuses.filter { $0 == 201 }.count == 3, "\(statuses)")
            #expect(statuses.filter { $0 == 429 }.count == 5, "\(statuses)")
            #expect(answers.filter { $0?.status == 429 }.allSatisfy { $0?.header("Retry-After") != nil })
            // Sequentially, on the instance that has sent none of them itself, still refused.
            let instances = [first, second]
            for app in instances {
                #expect(try fixture.requestCode(app, padding: 20 + instances.firstIndex { $0 === app }!).status == 429)
            }
            #expect(try DecisionFixtures.count(first, "SELECT count(*) FROM challenges") == 3)
        }
    }

    /// Runs `body` on `count` threads released at the same moment; results in index order.
    private static func together<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T?) -> [T?] {
        let results = Lock([T?](repeating: nil, count: count))
        let ready = DispatchGroup()
        let done = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for index in 0..<count {
            ready.enter()
            done.enter()
            Thread.detachNewThread {
                ready.leave()
                start.wait()
                let value = body(index)
                results.withLock { $0[index] = value }
                done.leave()
            }
        }
        ready.wait()
        for _ in 0..<count { start.signal() }
        done.wait()
        return results.withLock { $0 }
    }
}
