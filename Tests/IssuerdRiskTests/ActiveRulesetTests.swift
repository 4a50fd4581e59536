import Foundation
import IssuerdRisk
import Synchronization
import Testing

/// Reloads swap atomically and a bad reload keeps the last good ruleset serving.
struct ActiveRulesetTests {
    /// Two rulesets whose hits name their own generation, so a mixed one would show.
    static func generation(_ name: String) throws -> Ruleset {
        let rules = (1...20).map { rule("\(name).r\($0)", when: "wallet.device_score <= \($0)") }.joined()
        return try compileRules(rules)
    }

    @Test func evaluationsDuringReloadsAlwaysSeeOneWholeRuleset() throws {
        let a = try Self.generation("a")
        let b = try Self.generation("b")
        let active = ActiveRuleset(a)
        let input = {
            var input = cleanInput()
            input.walletDeviceScore = 1
            return input
        }()
        let mixed = Atomic<Int>(0)
        let evaluated = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let threads = 3
        let done = DispatchGroup()
        for _ in 0..<threads {
            done.enter()
            Thread.detachNewThread {
                while !stop.load(ordering: .acquiring) {
                    let decision = active.current.evaluate(input, velocity: [])
                    let prefix = decision.rulesetVersion == a.version ? "a." : "b."
                    if decision.hits.count != 20 || !decision.hits.allSatisfy({ $0.ruleID.hasPrefix(prefix) }) {
                        mixed.wrappingAdd(1, ordering: .relaxed)
                    }
                    evaluated.wrappingAdd(1, ordering: .relaxed)
                }
                done.leave()
            }
        }
        // Keep swapping until the evaluators have run plenty of times *during* the swaps.
        var swaps = 0
        var replaced = 0
        while swaps < 2_000 || evaluated.load(ordering: .relaxed) < 5_000 {
            let next = swaps % 2 == 0 ? b : a
            if case .replaced = active.reload({ () throws(RulesetError) -> Ruleset in next }) { replaced += 1 }
            swaps += 1
        }
        stop.store(true, ordering: .releasing)
        done.wait()
        #expect(replaced == swaps)
        #expect(mixed.load(ordering: .relaxed) == 0)
        #expect(evaluated.load(ordering: .relaxed) >= 5_000)
    }

    @Test func aFailedReloadKeepsTheLastGoodRulesetAndIsVisible() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-risk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let file = root.appendingPathComponent("policy.rules")
        try rule(when: "wallet.device_score <= 2").write(to: file, atomically: true, encoding: .utf8)
        let loader = RulesetLoader(directory: root, contentHasher: RulesetContent.fnv1a64)
        let active = ActiveRuleset(try loader.load(), loadedAt: Date(timeIntervalSince1970: 1))
        let good = active.status.version
        #expect(active.status.loadedBy == "start-up" && active.status.lastReload == nil)

        #expect(
            active.reload(from: loader, now: Date(timeIntervalSince1970: 50), by: "watcher via watcher")
                == .unchanged(version: good))
        #expect(
            active.status.lastReload
                == ReloadRecord(
                    time: Date(timeIntervalSince1970: 50), by: "watcher via watcher", result: .unchanged(version: good))
        )
        #expect(active.status.loadedBy == "start-up", "an unchanged reload swaps nothing in")

        try rule(when: "wallet.devise_score <= 2").write(to: file, atomically: true, encoding: .utf8)
        let failedAt = Date(timeIntervalSince1970: 100)
        guard case .failed(let failure) = active.reload(from: loader, now: failedAt, by: "signal via SIGHUP") else {
            Issue.record("a bad file must not load")
            return
        }
        #expect(failure.message.hasPrefix("policy.rules:6:8: error: unknown attribute 'wallet.devise_score'"))
        #expect(active.status.version == good)
        #expect(active.status.lastFailure?.time == failedAt)
        #expect(
            active.status.lastReload == ReloadRecord(time: failedAt, by: "signal via SIGHUP", result: .failed(failure)))
        var input = cleanInput()
        input.walletDeviceScore = 1
        #expect(active.current.evaluate(input, velocity: []).flow == .yellow, "the last good ruleset keeps deciding")

        try rule(when: "wallet.device_score <= 3").write(to: file, atomically: true, encoding: .utf8)
        guard
            case .replaced(let previous, let current) = active.reload(
                from: loader, now: Date(timeIntervalSince1970: 200), by: "apikey:k1 via api")
        else {
            Issue.record("a fixed file must load")
            return
        }
        #expect(previous == good)
        #expect(current == active.status.version)
        #expect(active.status.lastFailure == nil)
        #expect(active.status.loadedAt == Date(timeIntervalSince1970: 200))
        #expect(active.status.loadedBy == "apikey:k1 via api", "who loaded it is set with the swap")
        #expect(active.status.lastReload?.result == .replaced(previous: good, current: current))
    }

    @Test func aVersionWhoseExamplesFailIsRefusedAndTheOldOneKeepsServing() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-risk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try rule(when: "wallet.device_score <= 2").write(
            to: root.appendingPathComponent("policy.rules"), atomically: true, encoding: .utf8)
        let example = { (flow: String) in
            "example \"a low device score steps up\"\n  given {\n    wallet.device_score: 1\n  }\n  expect \(flow)\nend\n"
        }
        let cases = root.appendingPathComponent("policy.cases")
        try example("yellow").write(to: cases, atomically: true, encoding: .utf8)
        let loader = RulesetLoader(directory: root, contentHasher: RulesetContent.fnv1a64)
        let active = ActiveRuleset(try loader.loadTested().ruleset)
        let good = active.status.version

        // The rule file still compiles; only the example now expects another decision.
        try example("orange").write(to: cases, atomically: true, encoding: .utf8)
        #expect(throws: Never.self) { try loader.load() }
        guard case .failed(let failure) = active.reload(from: loader, by: "watcher") else {
            Issue.record("a version whose examples fail must not serve")
            return
        }
        #expect(failure.message.contains(#"policy.cases:1:1: error: example "a low device score steps up" fails"#))
        #expect(failure.message.contains("expected orange, got yellow"))
        #expect(active.status.version == good)
        #expect(active.status.lastFailure == failure)
        do {
            _ = try loader.loadTested()
        } catch {
            #expect(error.code == .examplesFailed)
        }

        try example("yellow").write(to: cases, atomically: true, encoding: .utf8)
        #expect(active.reload(from: loader, by: "watcher") == .unchanged(version: good))
        #expect(active.status.lastFailure == nil)
    }

    @Test func aMissingDirectoryIsAnUnreadableFailure() {
        let loader = RulesetLoader(path: "/nonexistent/issuerd-rules", contentHasher: RulesetContent.fnv1a64)
        #expect(throws: RulesetError.self) { try loader.load() }
        do {
            _ = try loader.load()
        } catch {
            #expect(error.code == .unreadable)
        }
    }
}
