import Foundation
import IssuerdRisk

/// `issuerd-bench risk`: the peers' 20-rule tokenization workload in our rule language.
///
/// Checks the per-rule hit counts, the flow mix and the first 20 requests' hits against the
/// workload's `expected.json` before timing anything, then times single-threaded evaluation
/// over pre-decoded inputs (median of several passes), then runs the peers in the same
/// session and prints the ratio to the fastest peer engine.
enum RiskBenchmark {
    /// One line of `requests.jsonl`.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    struct Request: Decodable {
        var card_status: String
        var wallet_recommendation: String
        var wallet_account_score: Double
        var wallet_device_score: Double
        var wallet_reason_codes: [String]
        var cvv_result: String
        var device_id: String
        var prov_attempts_card_24h: Int
        var prov_attempts_device_24h: Int
        var distinct_cards_device_24h: Int
        var failed_otp_card_7d: Int
        var tokens_deleted_card_30d: Int
        var tokenization_source: String
        var card_age_days: Double
        var account_age_days: Double
        var days_since_address_change: Double
        var days_since_phone_change: Double
        var phone_last4_match: Bool
        var name_match_score: Double
        var device_locale_country: String
        var card_country: String
        var ip_country: String
        var cards_on_device: Double
    }

    /// `expected.json`.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    struct Expected: Decodable {
        var n: Int
        var hits_per_rule: [String: Int]
        var decision_mix: [String: Int]
        var hits_of_first_20_requests: [[String]]
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func main(_ words: [String]) -> Int32 {
        do {
            try run(words)
            return 0
        } catch {
            FileHandle.standardError.write(Data("issuerd-bench risk: \(error)\n".utf8))
            return 1
        }
    }

    static func option(_ name: String, in words: [String]) -> String? {
        guard let index = words.firstIndex(of: "--" + name), index + 1 < words.count else { return nil }
        return words[index + 1]
    }

    static func run(_ words: [String]) throws {
        guard let workload = option("workload", in: words) else {
            throw Failure(description: "--workload DIR is required (python3 peer_bench.py --n 100000 --export DIR)")
        }
        let rulesDirectory = option("rules", in: words) ?? "bench/peer20"
        let runs = Int(option("runs", in: words) ?? "7") ?? 7
        let ruleset = try loadRuleset(rulesDirectory, workload: workload)
        let (inputs, velocities) = try decode(workload, ruleset: ruleset)
        try verify(ruleset, inputs, velocities, expected: try read(Expected.self, from: workload + "/expected.json"))
        print(
            "correctness: per-rule hits, flow mix and the first 20 requests' hits equal expected.json (\(inputs.count) requests, \(ruleset.rules.count) rules)"
        )

        let before = measure(ruleset, inputs, velocities, runs: runs)
        report("issuerd (Swift, compiled closures)", before, rules: ruleset.rules.count, runs: runs)

        guard let python = option("peers-python", in: words), let script = option("peers-script", in: words) else {
            print("peers: not run (give --peers-python and --peers-script to measure them in this session)")
            return
        }
        fflush(nil)  // our figures print before the peers' own output
        let engines =
            option("peers-engines", in: words)
            ?? "python-lambda,jsonlogic/rule,jsonlogic/set,cel-rust/rule,cel-rust/set,zen/set,zen/rule,rego"
        let peers = try runPeers(python: python, script: script, engines: engines, count: inputs.count)
        // Measured again after the peers: on a shared machine the load changes during the
        // run, so the ratio uses the mean of the two medians rather than the better one.
        let after = measure(ruleset, inputs, velocities, runs: runs)
        report("issuerd, again after the peers", after, rules: ruleset.rules.count, runs: runs)
        let requestsPerSecond = (before.wall + after.wall) / 2
        print("peers (same session):")
        var fastest: (name: String, rate: Double)?
        for (name, rate) in peers {
            let reference = name == "python-lambda"
            let label = name.padding(toLength: 16, withPad: " ", startingAt: 0)
            print(
                "  " + label + String(format: " %12.0f req/s  %7.2f us/req", rate, 1e6 / rate)
                    + (reference ? "  (plain CPython closures: a reference, not a rule engine)" : ""))
            if !reference, rate > (fastest?.rate ?? 0) { fastest = (name, rate) }
        }
        if let fastest {
            print(
                String(
                    format: "ratio: issuerd / fastest peer engine (%@) = %.1fx   (target >= 20x)",
                    fastest.name as NSString, requestsPerSecond / fastest.rate))
        }
    }

    static func report(_ label: String, _ rate: (wall: Double, cpu: Double), rules: Int, runs: Int) {
        let microseconds = 1e6 / rate.wall
        print(
            label.padding(toLength: 36, withPad: " ", startingAt: 0)
                + String(
                    format:
                        " %10.0f req/s  %6.3f us/req  %5.1f ns/rule  (median of %d passes, 1 thread; %.0f req/s of thread CPU time)",
                    rate.wall, microseconds, microseconds * 1000 / Double(rules), runs, rate.cpu))
        fflush(nil)
    }

    static func read<T: Decodable>(_ type: T.Type, from path: String) throws -> T {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Failure(description: "cannot read \(path)")
        }
        return try JSONDecoder().decode(type, from: data)
    }

    /// The peer20 rules plus the exported (untyped) lists, typed in memory.
    static func loadRuleset(_ directory: String, workload: String) throws -> Ruleset {
        var files = try RulesetLoader(path: directory, contentHasher: RulesetContent.fnv1a64).files()
        for name in ["blocked_devices", "high_risk_countries"] {
            guard let data = FileManager.default.contents(atPath: "\(workload)/\(name).list") else {
                throw Failure(description: "cannot read \(workload)/\(name).list")
            }
            files.append(
                RulesetFile(
                    path: "lists/\(name).list", contents: "type string\n" + String(decoding: data, as: UTF8.self)))
        }
        return try RulesetCompiler.compile(files, contentHasher: RulesetContent.fnv1a64)
    }
}
