import Foundation
import IssuerdCore
import IssuerdRisk
import Testing

/// Velocity is asked in one batch per request, deduplicated, and the in-memory history
/// answers as of any time, excluding the decision instant itself.
struct VelocityTests {
    /// Records every batch it is asked, and answers from an in-memory history.
    final class RecordingProvider: VelocityProvider {
        let history: InMemoryVelocityProvider
        // Guarded by Lock: tests read the batches after evaluating.
        let batches = Lock<[VelocityBatch]>([])
        init(_ events: [VelocityEvent]) { history = InMemoryVelocityProvider(events: events) }
        func values(for batch: VelocityBatch) -> [Int?] {
            batches.withLock { $0.append(batch) }
            return history.values(for: batch)
        }
    }

    static let t0 = Date(timeIntervalSince1970: 1_750_000_000)
    static func at(_ minutes: Double) -> Date { t0.addingTimeInterval(minutes * 60) }

    @Test func queriesAreDeduplicatedAndAskedInOneBatch() throws {
        let ruleset = try compileRules(
            rule("a", when: "attempts(card, 24h) >= 2")
                + rule("b", when: "attempts(card, 24h) >= 5 or distinct_cards(device, 1h) > 1")
                + rule("c", when: "failed_otps(customer, 24h) > 0 and attempts(card, 1440m) >= 1")
        )
        #expect(
            ruleset.velocityQueries.map(\.description) == [
                "attempts(card, 24h)", "distinct_cards(device, 1h)", "failed_otps(customer, 24h)",
            ])
        let provider = RecordingProvider([
            VelocityEvent(kind: .attempt, time: Self.at(-30), cardID: "c1", deviceID: "d1", customerID: "u1"),
            VelocityEvent(kind: .attempt, time: Self.at(-20), cardID: "c2", deviceID: "d1", customerID: "u1"),
            VelocityEvent(kind: .attempt, time: Self.at(-10), cardID: "c1", deviceID: "d2", customerID: "u1"),
            VelocityEvent(kind: .otpFailure, time: Self.at(-5), cardID: "c1", customerID: "u1"),
        ])
        let subject = VelocitySubject(cardID: "c1", deviceID: "d1", customerID: "u1")
        let decision = try ruleset.evaluate(cleanInput(), subject: subject, at: Self.at(0), using: provider)
        let batches = provider.batches.withLock { $0 }
        #expect(batches.count == 1)
        #expect(batches.first?.queries == ruleset.velocityQueries)
        #expect(decision.hits.map(\.ruleID) == ["a", "b", "c"])
        #expect(
            decision.hits[1].values == [
                RuleValue(name: "attempts(card, 24h)", value: .number(2)),
                RuleValue(name: "distinct_cards(device, 1h)", value: .number(2)),
            ])
    }

    @Test func windowsEndJustBeforeTheDecisionAndStartAtItsLength() {
        let events = [
            VelocityEvent(
                kind: .attempt, time: Self.at(-60), cardID: "c1", deviceID: "d1", cardholderName: "Jane  Doe"),
            VelocityEvent(kind: .attempt, time: Self.at(-59), cardID: "c2", deviceID: "d1", cardholderName: "JANE DOE"),
            VelocityEvent(kind: .attempt, time: Self.at(-1), cardID: "c3", deviceID: "d1", cardholderName: "John Roe"),
            VelocityEvent(kind: .attempt, time: Self.at(0), cardID: "c4", deviceID: "d1", cardholderName: "Mallory"),
            VelocityEvent(kind: .tokenDeletion, time: Self.at(-30), cardID: "c1", deviceID: "d1"),
        ]
        let provider = InMemoryVelocityProvider(events: events)
        let queries = [
            VelocityQuery(metric: .attempts, key: .device, windowSeconds: 3_600),
            VelocityQuery(metric: .distinctCards, key: .device, windowSeconds: 3_600),
            VelocityQuery(metric: .distinctNames, key: .device, windowSeconds: 3_600),
            VelocityQuery(metric: .attempts, key: .device, windowSeconds: 120),
            VelocityQuery(metric: .tokenDeletions, key: .card, windowSeconds: 3_600),
            VelocityQuery(metric: .failedOTPs, key: .customer, windowSeconds: 3_600),
        ]
        let now = provider.values(
            for: VelocityBatch(
                subject: VelocitySubject(cardID: "c1", deviceID: "d1"), time: Self.at(0), queries: queries))
        #expect(
            now == [3, 3, 2, 1, 1, nil],
            "the attempt at the decision instant is not counted; names normalise; no customer key is unknown")
        let earlier = provider.values(
            for: VelocityBatch(
                subject: VelocitySubject(cardID: "c1", deviceID: "d1"), time: Self.at(-30), queries: queries))
        #expect(earlier == [2, 2, 1, 0, 0, nil], "as of an earlier time the later history does not exist")
        let unknownDevice = provider.values(
            for: VelocityBatch(
                subject: VelocitySubject(cardID: "c9", deviceID: "d9", customerID: "u9"), time: Self.at(0),
                queries: queries))
        #expect(unknownDevice == [0, 0, 0, 0, 0, 0], "no history is zero, not unknown")
    }

    /// Keyed groups count under their one key only, whatever order they come in: a group out of
    /// time order, or groups of one key one after another out of order, give the same values as
    /// the same events in order.
    @Test func keyedGroupsInAnyOrder() {
        let history = [
            VelocityEvent(kind: .attempt, time: Self.at(-50), cardID: "c1", deviceID: "d1"),
            VelocityEvent(kind: .attempt, time: Self.at(-40), cardID: "c1", deviceID: "d2"),
            VelocityEvent(kind: .attempt, time: Self.at(-20), cardID: "c2", deviceID: "d1"),
        ]
        let window = [
            VelocityEvent(kind: .attempt, time: Self.at(-10), cardID: "c1", deviceID: "d1"),
            VelocityEvent(kind: .attempt, time: Self.at(-5), cardID: "c1", deviceID: "d1"),
        ]
        let queries = [
            VelocityQuery(metric: .attempts, key: .card, windowSeconds: 3_600),
            VelocityQuery(metric: .attempts, key: .card, windowSeconds: 900),
            VelocityQuery(metric: .distinctCards, key: .device, windowSeconds: 3_600),
            VelocityQuery(metric: .attempts, key: .device, windowSeconds: 1_800),
        ]
        let subject = VelocitySubject(cardID: "c1", deviceID: "d1")
        func values(_ keyed: [(key: VelocityKey, events: [VelocityEvent])]) -> [[Int?]] {
            let provider = InMemoryVelocityProvider(events: [], keyed: keyed)
            return [Self.at(-30), Self.at(-7), Self.at(0)].map {
                provider.values(for: VelocityBatch(subject: subject, time: $0, queries: queries))
            }
        }
        let inOrder = values([(.card, history), (.device, history), (.card, window), (.device, window)])
        // c1 by card: −50, −40, −10, −5; d1 by device: −50 (c1), −20 (c2), −10, −5 (c1).
        #expect(inOrder == [[2, 1, 1, 1], [3, 1, 2, 2], [4, 2, 2, 3]])
        #expect(values([(.card, window), (.card, history), (.device, window), (.device, history)]) == inOrder)
        #expect(
            values([(.card, history.reversed()), (.card, window.reversed()), (.device, (window + history).reversed())])
                == inOrder)
        // Under one key only: the card's events do not count for the device, nor the other way round.
        #expect(values([(.card, history + window)]).map { [$0[0], $0[1]] } == inOrder.map { [$0[0], $0[1]] })
        #expect(values([(.card, history + window)]).map { [$0[2], $0[3]] } == [[0, 0], [0, 0], [0, 0]])
    }

    /// Over 10,000 events the index is built in shards on several threads: every value is the one
    /// a single shard gives, for ids ending in any byte (a shard is chosen by the last one).
    @Test func shardedIndexAnswersAsOneShard() {
        let cards = (0..<400).map { "card-\($0)" } + ["", "é", "x🃏", "card-0 "]
        var events: [VelocityEvent] = []
        for index in 0..<12_000 {
            let card = cards[index * 7 % cards.count]
            events.append(
                VelocityEvent(
                    kind: index % 5 == 0 ? .otpFailure : .attempt, time: Self.at(-Double(index % 3_000)),
                    cardID: card, deviceID: "device-\(index % 97)",
                    customerID: index % 3 == 0 ? nil : "cu\(index % 31)",
                    cardholderName: "name \(index % 4)"))
        }
        let keyed: [(key: VelocityKey, events: [VelocityEvent])] = [
            (.card, Array(events[0..<6_000])), (.device, Array(events[6_000...])),
        ]
        let queries = VelocityKey.allCases.flatMap { key in
            [
                VelocityQuery(metric: .attempts, key: key, windowSeconds: 3_600),
                VelocityQuery(metric: .failedOTPs, key: key, windowSeconds: 86_400),
                VelocityQuery(metric: .distinctNames, key: key, windowSeconds: 7_200),
            ]
        }
        let one = InMemoryVelocityProvider(events: events, keyed: keyed, workers: 1)
        for workers in [2, 3, 8] {
            let sharded = InMemoryVelocityProvider(events: events, keyed: keyed, workers: workers)
            for (index, card) in cards.enumerated() {
                let subject = VelocitySubject(
                    cardID: card, deviceID: "device-\(index % 97)", customerID: "cu\(index % 31)")
                let batch = VelocityBatch(subject: subject, time: Self.at(-Double(index)), queries: queries)
                #expect(sharded.values(for: batch) == one.values(for: batch), "\(workers) workers, \(card)")
            }
        }
        // Not every value is 0: the comparison reads counts.
        let some = VelocityBatch(subject: VelocitySubject(cardID: "card-7"), time: Self.at(0), queries: queries)
        #expect(one.values(for: some).contains { ($0 ?? 0) > 0 })
    }

    /// Ids equal as strings share a bucket however the index is sharded: "K" and the Kelvin sign
    /// (U+212A), or a precomposed "Å" and "A" with a combining ring, are one card each, as they
    /// were before the index had shards.
    @Test func canonicallyEquivalentIdsShareABucketInEveryShardCount() {
        let pairs = [("card-K", "card-\u{212A}"), ("card-\u{C5}", "card-A\u{30A}"), ("card-\u{E9}", "card-e\u{301}")]
        var events: [VelocityEvent] = []
        for index in 0..<12_000 {
            let pair = pairs[index % pairs.count]
            let card = index % 4 == 0 ? pair.0 : index % 4 == 1 ? pair.1 : "card-\(index)"
            events.append(VelocityEvent(kind: .attempt, time: Self.at(-1 - Double(index % 50)), cardID: card))
        }
        let query = VelocityQuery(metric: .attempts, key: .card, windowSeconds: 3_600)
        for workers in [1, 2, 3, 8] {
            let provider = InMemoryVelocityProvider(events: events, keyed: [], workers: workers)
            for (precomposed, decomposed) in pairs {
                #expect(precomposed == decomposed)
                // 12,000 / 3 pairs / 2 of every 4 indices: 2,000 events of each pair, all within the hour.
                #expect(
                    provider.value(of: query, subject: VelocitySubject(cardID: precomposed), at: Self.at(0)) == 2_000,
                    "\(workers) workers")
                #expect(
                    provider.value(of: query, subject: VelocitySubject(cardID: decomposed), at: Self.at(0)) == 2_000,
                    "\(workers) workers")
            }
        }
    }
}
