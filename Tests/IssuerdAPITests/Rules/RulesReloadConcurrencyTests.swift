import Foundation
import IssuerdCore
import IssuerdRisk
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Reload under load: while files are rewritten and reloaded, every answer of
/// `GET /v1/admin/rules` describes one whole version, never a mix.
@Suite("Rules reload under concurrent requests")
struct RulesReloadConcurrencyTests {
    @Test("Readers always see a whole version while a writer swaps two variants")
    func readersSeeWholeVersions() throws {
        let rules = try RulesTestData.copyOfRules()
        defer { try? FileManager.default.removeItem(at: rules) }
        let extra = rules.appendingPathComponent("policy/zz_variant.rules")
        let variants = [
            RulesTestData.rule("zz.variant_a", mode: "shadow", when: "wallet.device_score <= 0"),
            RulesTestData.rule("zz.variant_b1", mode: "shadow", when: "wallet.device_score <= 1")
                + RulesTestData.rule("zz.variant_b2", mode: "shadow", when: "wallet.account_score <= 0"),
        ]
        // The expected rule ids of each version, compiled independently of the server.
        var expected: [String: Set<String>] = [:]
        for variant in variants {
            try variant.write(to: extra, atomically: true, encoding: .utf8)
            let ruleset = try RulesetLoader(path: rules.path, contentHasher: RulesetVersioning.sha256).load()
            expected[ruleset.version] = Set(ruleset.rules.map(\.id))
        }
        #expect(expected.count == 2)
        let versions = expected
        let app = try TestApplication(rulesDirectory: rules.path)
        let key = try app.apiKey(role: .admin)
        let headers = ["Authorization": "Bearer \(key)"]

        let stop = Lock(false)
        let problems = Lock<[String]>([])
        let seen = Lock<Set<String>>([])
        let readers = DispatchGroup()
        for _ in 0..<3 {
            readers.enter()
            Thread.detachNewThread {
                defer { readers.leave() }
                while !stop.withLock({ $0 }) {
                    do {
                        let response = try app.client.get("/v1/admin/rules", headers: headers)
                        guard response.status == 200, let body = response.jsonObject(),
                            let version = body["version"] as? String,
                            let list = body["rules"] as? [[String: Any]]
                        else {
                            problems.withLock { $0.append("status \(response.status)") }
                            continue
                        }
                        let ids = Set(list.compactMap { $0["id"] as? String })
                        seen.withLock { _ = $0.insert(version) }
                        if versions[version] != ids {
                            problems.withLock { $0.append("version \(version) served rules \(ids.sorted())") }
                        }
                    } catch {
                        problems.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        for round in 0..<12 {
            try variants[round % 2].write(to: extra, atomically: true, encoding: .utf8)
            let response = try app.client.postJSON("/v1/admin/rules/reload", "{}", headers: headers)
            #expect(response.status == 200)
        }
        stop.withLock { $0 = true }
        readers.wait()
        #expect(problems.withLock { $0 }.isEmpty, "\(problems.withLock { $0.prefix(5) })")
        #expect(seen.withLock { $0 }.isSubset(of: Set(versions.keys)))
        #expect(!seen.withLock { $0 }.isEmpty)
    }
}
