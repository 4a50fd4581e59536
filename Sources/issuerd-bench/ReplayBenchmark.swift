import Foundation
import IssuerdRisk

/// `issuerd-bench replay --current DIR --candidate DIR [--attempts N]`: the engine's bare rate on
/// a backtest's own rulesets, the reference `scripts/bench-backtest` prints beside the streaming
/// backtest over PostgreSQL. N attempts shaped as `scripts/lib/console-seed.sql` seeds them (the
/// same attributes, every velocity value recorded) are built in memory, then replayed through
/// both rulesets with ``Backtest/run(current:candidate:attempts:recorded:history:sampleSize:progressEvery:workers:progress:changed:)``
/// on every core, and `Ruleset.evaluate` of the current ruleset alone is timed on one thread:
/// no reading, no parsing, no velocity counted. Medians of 5 passes.
enum ReplayBenchmark {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func run(_ words: [String]) throws -> Int32 {
        func option(_ name: String) -> String? {
            guard let index = words.firstIndex(of: "--" + name), index + 1 < words.count else { return nil }
            return words[index + 1]
        }
        guard let currentDirectory = option("current"), let candidateDirectory = option("candidate") else {
            throw Failure(description: "--current DIR and --candidate DIR are required")
        }
        guard let count = Int(option("attempts") ?? "1000000"), (1_000...20_000_000).contains(count) else {
            throw Failure(description: "--attempts takes a number from 1000 to 20000000")
        }
        let current = try RulesetLoader(path: currentDirectory, contentHasher: RulesetContent.fnv1a64).load()
        let candidate = try RulesetLoader(path: candidateDirectory, contentHasher: RulesetContent.fnv1a64).load()
        var queries: [VelocityQuery] = []
        for query in current.velocityQueries + candidate.velocityQueries where !queries.contains(query) {
            queries.append(query)
        }
        let (attempts, recorded) = workload(count: count, queries: queries)
        let history = SlidingVelocity(queries: [])
        var replayRates: [Double] = []
        var report: Backtest.Report?
        for _ in 0..<5 {
            let start = DispatchTime.now().uptimeNanoseconds
            report = Backtest.run(
                current: current, candidate: candidate, attempts: attempts, recorded: recorded, history: history,
                progressEvery: 60_000)
            replayRates.append(Double(count) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9))
        }
        var evaluateRates: [Double] = []
        let values = current.velocityQueries.map { _ in Int?(1) }
        for _ in 0..<5 {
            var orange = 0
            let start = DispatchTime.now().uptimeNanoseconds
            for attempt in attempts.prefix(min(count, 1_000_000)) {
                if current.evaluate(attempt.input, velocity: values).flow == .orange { orange += 1 }
            }
            evaluateRates.append(
                Double(min(count, 1_000_000)) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9))
            if orange < 0 { print(orange) }  // keeps the loop's result alive
        }
        func median(_ rates: [Double]) -> Double { rates.sorted()[rates.count / 2] }
        print(
            String(
                format:
                    "engine, in memory: replay of both rulesets %.0f attempts/s on %d cores; Ruleset.evaluate %.0f/s on 1 thread (%d attempts, %d changed)",
                median(replayRates), ProcessInfo.processInfo.activeProcessorCount, median(evaluateRates), count,
                report?.changed ?? 0))
        return 0
    }

    /// Attempts as the console seed writes them, each with every query's value recorded.
    static func workload(count: Int, queries: [VelocityQuery]) -> ([AttemptLog.Attempt], RecordedVelocity) {
        let customers = max(50, count / 20)
        var attempts: [AttemptLog.Attempt] = []
        attempts.reserveCapacity(count)
        var recorded = RecordedVelocity(queries: queries)
        recorded.reserveCapacity(rows: count)
        let start = Date(timeIntervalSince1970: 1_740_787_200)
        let channels: [RequestChannel] =
            [.inApp, .inApp, .inApp, .inApp, .inApp, .walletExtension, .walletExtension]
            + [.tsp, .tsp, .tsp]
        let networks: [CardNetwork] = [.visa, .mastercard, .amex, .discover]
        var row: [Int?] = []
        for index in 1...count {
            let card = 1 + (index * 104_729) % customers
            var input = RiskInput()
            input.time = start.addingTimeInterval(Double(index) * 0.864)
            input.channel = channels[index % 10]
            input.cardNetwork = networks[card % 4]
            input.cardCountry = "GB"
            input.cardStatus = .active
            input.deviceID = "seed-dev-\(index % (customers * 2))"
            input.deviceActiveTokens = Double((index * 31) % 10)
            input.nameMatchScore = Double(40 + (index * 17) % 61)
            attempts.append(
                AttemptLog.Attempt(
                    id: "a\(index)", time: input.time!,
                    subject: VelocitySubject(
                        cardID: "seed-card-\(card)", deviceID: input.deviceID, customerID: "seed-cust-\(card)"),
                    input: input, line: index))
            row.removeAll(keepingCapacity: true)
            for query in queries { row.append(query.key == .card ? index % 3 : 0) }
            recorded.append(row)
        }
        return (attempts, recorded)
    }
}
