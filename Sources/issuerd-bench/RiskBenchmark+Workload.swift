import Foundation
import IssuerdCore
import IssuerdRisk

extension RiskBenchmark {
    /// Decodes every request into the engine's input form (outside the timed region).
    static func decode(_ workload: String, ruleset: Ruleset) throws -> ([RiskInput], [[Int?]]) {
        guard let data = FileManager.default.contents(atPath: workload + "/requests.jsonl") else {
            throw Failure(description: "cannot read \(workload)/requests.jsonl")
        }
        let decoder = JSONDecoder()
        var inputs: [RiskInput] = []
        var velocities: [[Int?]] = []
        let slots = ruleset.velocityQueries.map(\.description)
        for line in [UInt8](data).split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            let request = try decoder.decode(Request.self, from: Data(line))
            inputs.append(try input(for: request))
            let counters: [String: Int] = [
                "attempts(card, 24h)": request.prov_attempts_card_24h,
                "attempts(device, 24h)": request.prov_attempts_device_24h,
                "distinct_cards(device, 24h)": request.distinct_cards_device_24h,
                "failed_otps(card, 7d)": request.failed_otp_card_7d,
                "token_deletions(card, 30d)": request.tokens_deleted_card_30d,
            ]
            velocities.append(
                try slots.map { slot in
                    guard let value = counters[slot] else {
                        throw Failure(description: "the workload has no counter for \(slot)")
                    }
                    return value
                })
        }
        return (inputs, velocities)
    }

    static func input(for request: Request) throws -> RiskInput {
        let day = 86_400.0
        var input = RiskInput()
        input.cardStatus = try enumeration(CardStatus.self, request.card_status.lowercased())
        input.walletRecommendation = try enumeration(
            WalletRecommendation.self,
            request.wallet_recommendation == "REQUIRE_ADDITIONAL_AUTH"
                ? "require_additional_authentication" : request.wallet_recommendation.lowercased())
        input.walletAccountScore = request.wallet_account_score
        input.walletDeviceScore = request.wallet_device_score
        input.walletReasonCodes = request.wallet_reason_codes
        input.cvvResult = try enumeration(CVVResult.self, request.cvv_result.lowercased())
        input.deviceID = request.device_id
        input.source = try enumeration(
            TokenizationSource.self,
            request.tokenization_source == "APP" ? "push" : request.tokenization_source.lowercased())
        input.cardAge = request.card_age_days * day
        input.customerAge = request.account_age_days * day
        input.sinceAddressChange = request.days_since_address_change * day
        input.sincePhoneChange = request.days_since_phone_change * day
        input.phoneLast4Match = request.phone_last4_match
        input.nameMatchScore = request.name_match_score
        input.deviceLocaleCountry = request.device_locale_country
        input.cardCountry = request.card_country
        input.deviceIPCountry = request.ip_country
        input.deviceActiveTokens = request.cards_on_device
        return input
    }

    static func enumeration<E: RiskEnumeration>(_ type: E.Type, _ name: String) throws -> E {
        guard let value = E(name: name) else { throw Failure(description: "'\(name)' is not a \(E.self)") }
        return value
    }

    /// Per-rule hits, flow mix and the first 20 requests' hits must equal the reference.
    static func verify(_ ruleset: Ruleset, _ inputs: [RiskInput], _ velocities: [[Int?]], expected: Expected) throws {
        guard inputs.count == expected.n else {
            throw Failure(description: "\(inputs.count) requests, expected.json says \(expected.n)")
        }
        var hits: [String: Int] = [:]
        var mix: [String: Int] = ["GREEN": 0, "YELLOW": 0, "ORANGE": 0]
        for index in inputs.indices {
            let decision = ruleset.evaluate(inputs[index], velocity: velocities[index])
            let ruleHits = decision.hits.map(\.ruleID).filter { !$0.hasPrefix("invariant.") }
            for id in ruleHits { hits[id, default: 0] += 1 }
            mix[decision.flow.description.uppercased(), default: 0] += 1
            if index < expected.hits_of_first_20_requests.count,
                ruleHits.sorted() != expected.hits_of_first_20_requests[index]
            {
                throw Failure(
                    description:
                        "request \(index): hits \(ruleHits.sorted()) but the reference says \(expected.hits_of_first_20_requests[index])"
                )
            }
        }
        for (id, count) in expected.hits_per_rule.sorted(by: { $0.key < $1.key }) where hits[id, default: 0] != count {
            throw Failure(description: "rule \(id): \(hits[id, default: 0]) hits, expected.json says \(count)")
        }
        guard mix == expected.decision_mix else {
            throw Failure(description: "flow mix \(mix), expected.json says \(expected.decision_mix)")
        }
    }

    /// Median requests per second over `runs` timed passes after one warm-up pass, by the wall
    /// clock (what the peers report) and by this thread's CPU time (robust to other load).
    static func measure(
        _ ruleset: Ruleset, _ inputs: [RiskInput], _ velocities: [[Int?]], runs: Int
    ) -> (wall: Double, cpu: Double) {
        // One pass: every request decided in full (hits with their values); the checksum keeps
        // the optimiser from discarding the work.
        func threadCPUSeconds() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
        func pass() -> (Duration, Int, Double) {
            let clock = ContinuousClock()
            let cpuStart = threadCPUSeconds()
            let start = clock.now
            var checksum = 0
            // Borrow the pre-decoded inputs in place, as a server borrows its request's input.
            inputs.withUnsafeBufferPointer { inputs in
                velocities.withUnsafeBufferPointer { velocities in
                    for index in inputs.indices {
                        let decision = ruleset.evaluate(inputs[index], velocity: velocities[index])
                        checksum &+= decision.flow.rawValue &+ decision.hits.count
                    }
                }
            }
            let elapsed = clock.now - start
            return (elapsed, checksum, threadCPUSeconds() - cpuStart)
        }
        var checksum = pass().1
        var rates: [Double] = []
        var cpuRates: [Double] = []
        for _ in 0..<max(1, runs) {
            let (elapsed, sum, cpu) = pass()
            checksum &+= sum
            let seconds = elapsed.timeInterval
            rates.append(Double(inputs.count) / seconds)
            cpuRates.append(Double(inputs.count) / max(cpu, 1e-9))
        }
        if checksum == 42 { print("") }
        return (rates.sorted()[rates.count / 2], cpuRates.sorted()[cpuRates.count / 2])
    }

    /// Runs `peer_bench.py` on the same number of requests and returns (engine, req/s).
    static func runPeers(python: String, script: String, engines: String, count: Int) throws -> [(String, Double)] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "peers-\(ProcessInfo.processInfo.processIdentifier).json")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, "--n", String(count), "--engines", engines, "--json", output.path]
        FileHandle.standardError.write(
            Data("running peers: \(python) \(script) --n \(count) --engines \(engines)\n".utf8))
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "peer_bench.py exited with \(process.terminationStatus)")
        }
        defer { try? FileManager.default.removeItem(at: output) }
        struct Report: Decodable {
            // swift-format-ignore: AlwaysUseLowerCamelCase
            struct Row: Decodable {
                var engine: String
                var evals_per_s: Double?
                var agreement: String?
            }
            var results: [Row]
        }
        let report = try read(Report.self, from: output.path)
        return report.results.compactMap { row in
            guard let rate = row.evals_per_s, let agreement = row.agreement else { return nil }
            let parts = agreement.split(separator: "/")
            guard parts.count == 2, parts[0] == parts[1] else { return nil }  // a peer that disagrees does not count
            return (row.engine, rate)
        }
    }
}
