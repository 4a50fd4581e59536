import Foundation
import IssuerdRisk
import IssuerdTestSupport
import Testing

/// A backtest fed one slice at a time (``Backtest/Accumulator`` over ``SlidingVelocity``, as
/// `HistoryBacktest` streams PostgreSQL) gives the report of the replay holding the whole
/// history in memory, and holds per key only what the rules' longest window needs.
struct StreamingBacktestTests {
    static let start = Date(timeIntervalSince1970: 1_740_787_200)  // 2025-03-01T00:00:00Z

    /// Every metric, by several keys and windows; live and shadow; and a rule whose value is
    /// only recorded (never counted, see `recorded(_:)`).
    static let current = [
        rule("burst", outcome: "orange", when: "attempts(card, 1h) >= 3"),
        rule("device_cards", when: "distinct_cards(device, 24h) >= 3"),
        rule("otps", when: "failed_otps(customer, 6h) >= 2"),
    ].joined()
    static let candidate = [
        rule("burst", outcome: "orange", when: "attempts(card, 2h) >= 3"),
        rule("device_cards", outcome: "orange", when: "distinct_cards(device, 24h) >= 2"),
        rule("names", when: "distinct_names(device, 2h) >= 2"),
        rule("stepups", when: "failed_stepups(card, 12h) >= 1"),
        rule("deletions", outcome: "orange", when: "token_deletions(device, 48h) >= 1"),
        rule("customer_day", mode: "shadow", when: "attempts(customer, 24h) >= 4"),
        rule("low", when: "wallet.device_score <= 1"),
    ].joined()

    /// Five days of attempts and the other events over small pools of cards, devices and
    /// customers (so windows fill), some without a device, at times that repeat.
    static func history(
        seed: UInt64, attempts count: Int
    ) -> (attempts: [AttemptLog.Attempt], events: [VelocityEvent], names: [String?]) {
        var random = SeededGenerator(seed: seed)
        var attempts: [AttemptLog.Attempt] = []
        var events: [VelocityEvent] = []
        var names: [String?] = []
        var time = start
        for index in 0..<count {
            // Whole seconds, often equal: attempts at the same time do not count each other.
            time = time.addingTimeInterval(Double(Int.random(in: 0...240, using: &random)))
            let card = "c\(Int.random(in: 0..<60, using: &random))"
            let device =
                Int.random(in: 0..<10, using: &random) == 0 ? nil : "d\(Int.random(in: 0..<25, using: &random))"
            let customer = "u\(Int.random(in: 0..<30, using: &random))"
            let name = ["JANE DOE", "jane  doe", "JOHN ROE", "MALLORY"].randomElement(using: &random)
            names.append(name)
            var input = RiskInput()
            input.time = time
            input.cardStatus = .active
            input.walletRecommendation = .approve
            input.walletDeviceScore = Double(Int.random(in: 0...5, using: &random))
            input.channel = [.inApp, .tsp, .walletExtension].randomElement(using: &random)
            let subject = VelocitySubject(cardID: card, deviceID: device, customerID: customer)
            attempts.append(
                AttemptLog.Attempt(id: "a\(index)", time: time, subject: subject, input: input, line: index + 1))
            events.append(
                VelocityEvent(
                    kind: .attempt, time: time, cardID: card, deviceID: device, customerID: customer,
                    cardholderName: name))
            switch Int.random(in: 0..<20, using: &random) {
            case 0:
                events.append(
                    VelocityEvent(
                        kind: .otpFailure, time: time.addingTimeInterval(30), cardID: card, customerID: customer))
            case 1:
                events.append(
                    VelocityEvent(
                        kind: .stepUpFailure, time: time.addingTimeInterval(45), cardID: card, customerID: customer))
            case 2:
                events.append(
                    VelocityEvent(
                        kind: .tokenDeletion, time: time.addingTimeInterval(60), cardID: card, deviceID: device,
                        customerID: customer))
            default: break
            }
        }
        events.sort { $0.time < $1.time }
        return (attempts, events, names)
    }

    /// The values every fourth attempt recorded for the current ruleset's queries (the rest left
    /// to history), as a stored history mixes attempts with and without features.
    static func recorded(
        _ attempts: [AttemptLog.Attempt], queries: [VelocityQuery], from truth: InMemoryVelocityProvider
    ) -> RecordedVelocity {
        var table = RecordedVelocity(queries: queries)
        for (index, attempt) in attempts.enumerated() {
            table.append(
                queries.map { index % 4 == 0 ? truth.value(of: $0, subject: attempt.subject, at: attempt.time) : nil })
        }
        return table
    }

    /// Replays `attempts` in slices of `slice` seconds the way `BacktestStream` does: evict,
    /// add the slice's other events, then its attempts, then replay the slice.
    static func streamed(
        current: Ruleset, candidate: Ruleset, attempts: [AttemptLog.Attempt], events: [VelocityEvent],
        names: [String?], recorded: RecordedVelocity?, slice: TimeInterval,
        observe: (SlidingVelocity) -> Void = { _ in }
    ) -> (Backtest.Report, [Backtest.ChangedAttempt]) {
        var queries: [VelocityQuery] = []
        for query in current.velocityQueries + candidate.velocityQueries where !queries.contains(query) {
            queries.append(query)
        }
        var velocity = SlidingVelocity(queries: queries)
        var accumulator = Backtest.Accumulator(
            current: current, candidate: candidate, sampleSize: 15, collectChanges: true, workers: 2)
        var changes: [Backtest.ChangedAttempt] = []
        let others = events.filter { $0.kind != .attempt }
        var sliceStart = start
        var next = 0
        var nextEvent = 0
        while next < attempts.count {
            let end = sliceStart.addingTimeInterval(slice)
            velocity.evict(before: sliceStart)
            while nextEvent < others.count, others[nextEvent].time < end {
                velocity.add(others[nextEvent])
                nextEvent += 1
            }
            var last = next
            while last < attempts.count, attempts[last].time < end { last += 1 }
            // Rows of the slice, as a slice's read gives them.
            let sliceAttempts = Array(attempts[next..<last])
            var sliceRecorded = recorded.map { RecordedVelocity(queries: $0.queries) }
            for row in next..<last {
                sliceRecorded?.append(row: row, of: recorded!)
                velocity.add(
                    VelocityEvent(
                        kind: .attempt, time: attempts[row].time, cardID: attempts[row].subject.cardID,
                        deviceID: attempts[row].subject.deviceID, customerID: attempts[row].subject.customerID,
                        cardholderName: names[row]))
            }
            changes += accumulator.add(
                sliceAttempts, sliceAttempts.indices, recorded: sliceRecorded, history: velocity)
            observe(velocity)
            next = last
            sliceStart = end
        }
        return (accumulator.report, changes)
    }

    static func expectSame(_ streamed: Backtest.Report, _ held: Backtest.Report) {
        #expect(streamed.attempts == held.attempts)
        #expect(streamed.currentHits == held.currentHits)
        #expect(streamed.candidateHits == held.candidateHits)
        #expect(streamed.currentMix == held.currentMix)
        #expect(streamed.candidateMix == held.candidateMix)
        #expect(streamed.transitions == held.transitions)
        #expect(streamed.changed == held.changed)
        #expect(streamed.currentUnresolved == held.currentUnresolved)
        #expect(streamed.candidateUnresolved == held.candidateUnresolved)
        #expect(streamed.sample.map(\.attemptID) == held.sample.map(\.attemptID))
        #expect(streamed.sample.map(\.before) == held.sample.map(\.before))
        #expect(streamed.sample.map(\.after) == held.sample.map(\.after))
    }

    @Test(
        "Streamed in slices, velocity evicted as it goes, the report is the in-memory replay's",
        arguments: [(UInt64(1), 600.0), (UInt64(2), 3_600.0), (UInt64(3), 86_400.0), (UInt64(4), 604_800.0)]
            as [(UInt64, Double)])
    func streamedEqualsHeld(seed: UInt64, slice: TimeInterval) throws {
        let current = try compileRules(Self.current)
        let candidate = try compileRules(Self.candidate)
        let (attempts, events, names) = Self.history(seed: seed, attempts: 2_500)
        let truth = InMemoryVelocityProvider(events: events)
        let recorded = Self.recorded(attempts, queries: current.velocityQueries, from: truth)
        var heldChanges: [Backtest.ChangedAttempt] = []
        let held = Backtest.run(
            current: current, candidate: candidate, attempts: attempts, recorded: recorded, history: truth,
            sampleSize: 15, progressEvery: 1_000, changed: { heldChanges += $0 })
        let (streamed, changes) = Self.streamed(
            current: current, candidate: candidate, attempts: attempts, events: events, names: names,
            recorded: recorded, slice: slice)
        Self.expectSame(streamed, held)
        #expect(changes == heldChanges)
        // Not trivially equal: the velocity rules decide, and many attempts change.
        let hits = Dictionary(uniqueKeysWithValues: held.candidateHits.map { ($0.ruleID, $0.hits) })
        for id in ["burst", "device_cards", "names", "stepups", "deletions", "customer_day"] {
            #expect((hits[id] ?? 0) > 0, "\(id) never hit: \(hits)")
        }
        #expect(held.changed > 100 && held.changed < attempts.count, "\(held.changed)")
        #expect(changes.count == held.changed)
    }

    @Test("Without recorded values every value is counted, streamed or held")
    func everyValueCounted() throws {
        let current = try compileRules(Self.current)
        let candidate = try compileRules(Self.candidate)
        let (attempts, events, names) = Self.history(seed: 9, attempts: 1_500)
        let held = Backtest.run(
            current: current, candidate: candidate, attempts: attempts, recorded: nil,
            history: InMemoryVelocityProvider(events: events), sampleSize: 15)
        let (streamed, _) = Self.streamed(
            current: current, candidate: candidate, attempts: attempts, events: events, names: names, recorded: nil,
            slice: 5_400)
        Self.expectSame(streamed, held)
    }

    @Test("Eviction bounds the velocity held by the keys active within the longest window, not by the period")
    func evictionBoundsTheState() throws {
        // 30 days, an attempt a minute, each hour's attempts on new cards and devices: 43,200
        // attempts in all, at most 2 h of them (120 attempts, 240 events under two keys) within
        // the longest window that matters.
        let rules = try compileRules(
            rule("burst", when: "attempts(card, 2h) >= 2") + rule("device", when: "attempts(device, 30m) >= 3"))
        var attempts: [AttemptLog.Attempt] = []
        var events: [VelocityEvent] = []
        for minute in 0..<(30 * 24 * 60) {
            let time = Self.start.addingTimeInterval(Double(minute * 60))
            let hour = minute / 60
            let subject = VelocitySubject(cardID: "c\(hour)-\(minute % 7)", deviceID: "d\(hour)-\(minute % 3)")
            var input = cleanInput()
            input.time = time
            attempts.append(AttemptLog.Attempt(id: "a\(minute)", time: time, subject: subject, input: input, line: 0))
            events.append(VelocityEvent(kind: .attempt, time: time, cardID: subject.cardID, deviceID: subject.deviceID))
        }
        var peakEvents = 0
        var peakKeys = 0
        let (streamed, _) = Self.streamed(
            current: rules, candidate: rules, attempts: attempts, events: events,
            names: [String?](repeating: nil, count: attempts.count), recorded: nil, slice: 3_600
        ) { velocity in
            peakEvents = max(peakEvents, velocity.eventCount)
            peakKeys = max(peakKeys, velocity.keyCount)
        }
        #expect(streamed.attempts == 43_200)
        // Before a slice is replayed: the 2 h before it by card (120) and the 30 min by device
        // (30), plus the slice itself under both keys (120).
        #expect(peakEvents <= 120 + 30 + 120, "\(peakEvents) events held")
        #expect(peakEvents >= 120, "the 2 h window is held: \(peakEvents)")
        #expect(peakKeys <= 3 * 7 + 2 * 3, "\(peakKeys) keys held")
        let held = Backtest.run(
            current: rules, candidate: rules, attempts: attempts, recorded: nil,
            history: InMemoryVelocityProvider(events: events))
        Self.expectSame(streamed, held)
        #expect((held.currentHits.first { $0.ruleID == "burst" }?.hits ?? 0) > 0)
    }

    @Test("Evicting keeps exactly the window's events and drops ids left empty")
    func evictKeepsTheWindow() {
        let query = VelocityQuery(metric: .attempts, key: .card, windowSeconds: 3_600)
        var velocity = SlidingVelocity(queries: [
            query, VelocityQuery(metric: .attempts, key: .card, windowSeconds: 600),
        ])
        for minute in [0, 10, 50, 70, 130] {
            velocity.add(
                VelocityEvent(kind: .attempt, time: Self.start.addingTimeInterval(Double(minute * 60)), cardID: "c1"))
        }
        velocity.add(VelocityEvent(kind: .attempt, time: Self.start, cardID: "c2"))
        // Out of order: moved into place.
        velocity.add(VelocityEvent(kind: .attempt, time: Self.start.addingTimeInterval(65 * 60), cardID: "c1"))
        #expect(velocity.eventCount == 7)
        #expect(velocity.keyCount == 2)
        velocity.evict(before: Self.start.addingTimeInterval(115 * 60))  // keeps [55 min, …)
        #expect(velocity.eventCount == 3, "65, 70 and 130 of c1")
        #expect(velocity.keyCount == 1, "c2 is gone")
        let subject = VelocitySubject(cardID: "c1")
        #expect(velocity.value(of: query, subject: subject, at: Self.start.addingTimeInterval(120 * 60)) == 2)
        #expect(velocity.value(of: query, subject: subject, at: Self.start.addingTimeInterval(131 * 60)) == 1)
        #expect(velocity.value(of: query, subject: VelocitySubject(cardID: "c2"), at: Self.start) == 0)
        #expect(velocity.value(of: query, subject: VelocitySubject(), at: Self.start) == nil)
        // With slack, a sweep waits until the window has moved on by that share of its length.
        var slack = velocity
        slack.evict(before: Self.start.addingTimeInterval(120 * 60), slack: 0.5)
        #expect(slack.eventCount == 3, "5 minutes on: not swept")
        slack.evict(before: Self.start.addingTimeInterval(150 * 60), slack: 0.5)
        #expect(slack.eventCount == 1, "35 minutes on: swept, 65 and 70 of c1 dropped; 130 kept")
        #expect(velocity.lookbackSeconds == 3_600)
        // Groups included later start empty (to be fed their window), a wider window resets its group.
        var later = SlidingVelocity(queries: [])
        let day = VelocityQuery(metric: .attempts, key: .card, windowSeconds: 86_400)
        #expect(!later.counts(query))
        #expect(later.include([query]) == [.init(kind: .attempt, key: .card, seconds: 3_600)])
        #expect(later.counts(query) && !later.counts(day))
        #expect(later.include([query]).isEmpty, "already kept")
        later.add(VelocityEvent(kind: .attempt, time: Self.start, cardID: "c1"))
        #expect(later.include([day]) == [.init(kind: .attempt, key: .card, seconds: 86_400)])
        #expect(later.eventCount == 0 && later.counts(query) && later.counts(day))
        #expect(!velocity.reads(.otpFailure, by: .card))
        velocity.add(VelocityEvent(kind: .otpFailure, time: Self.start, cardID: "c1"))
        #expect(velocity.eventCount == 3, "no query reads failures: not kept")
    }

    @Test("A group keeps card ids and names only for a distinct query; one added later starts it again")
    func distinctQueriesKeepWhatTheyCount() {
        let attempts = VelocityQuery(metric: .attempts, key: .device, windowSeconds: 86_400)
        let cards = VelocityQuery(metric: .distinctCards, key: .device, windowSeconds: 3_600)
        let names = VelocityQuery(metric: .distinctNames, key: .device, windowSeconds: 3_600)
        var velocity = SlidingVelocity(queries: [attempts], parts: 1)
        func feed() {
            for (minute, card, name) in [(0, "c1", "JANE DOE"), (10, "c2", "jane doe"), (20, "c2", "JOHN ROE")] {
                velocity.add(
                    VelocityEvent(
                        kind: .attempt, time: Self.start.addingTimeInterval(Double(minute * 60)), cardID: card,
                        deviceID: "d1", cardholderName: name))
            }
        }
        feed()
        let subject = VelocitySubject(deviceID: "d1")
        let at = Self.start.addingTimeInterval(30 * 60)
        #expect(velocity.value(of: attempts, subject: subject, at: at) == 3)
        #expect(velocity.counts(attempts) && !velocity.counts(cards) && !velocity.counts(names))
        // A distinct query of a group kept without card ids (or names) is not counted from it: the
        // group starts again, over its longest window, to be fed that window with what it counts.
        #expect(velocity.include([cards]) == [.init(kind: .attempt, key: .device, seconds: 86_400)])
        #expect(velocity.eventCount == 0)
        feed()
        #expect(velocity.value(of: cards, subject: subject, at: at) == 2)
        #expect(velocity.counts(cards) && !velocity.counts(names))
        #expect(velocity.include([cards]).isEmpty, "already kept with card ids")
        #expect(velocity.include([names]) == [.init(kind: .attempt, key: .device, seconds: 86_400)])
        feed()
        #expect(velocity.value(of: names, subject: subject, at: at) == 2, "JANE DOE twice, JOHN ROE")
        #expect(velocity.value(of: cards, subject: subject, at: at) == 2)
        #expect(velocity.value(of: attempts, subject: subject, at: at) == 3)
        #expect(velocity.include([attempts, cards, names]).isEmpty)
    }

    @Test("Ids spread over parts give the answers of one part, added one by one or in batches")
    func partsAnswerAsOne() {
        let queries = [
            VelocityQuery(metric: .attempts, key: .card, windowSeconds: 3_600),
            VelocityQuery(metric: .distinctCards, key: .device, windowSeconds: 7_200),
            VelocityQuery(metric: .distinctNames, key: .customer, windowSeconds: 7_200),
            VelocityQuery(metric: .failedOTPs, key: .customer, windowSeconds: 1_800),
        ]
        var generator = SeededGenerator(seed: 7)
        // 6,000 events over four hours (out of order now and then), ids from small pools so they repeat.
        let events = (0..<6_000).map { index in
            VelocityEvent(
                kind: index % 7 == 0 ? .otpFailure : .attempt,
                time: Self.start.addingTimeInterval(
                    Double(index) * 2.4 - Double(Int.random(in: 0...30, using: &generator))),
                cardID: "card-\(Int.random(in: 0..<300, using: &generator))",
                deviceID: "device-\(Int.random(in: 0..<80, using: &generator))",
                customerID: "customer-\(Int.random(in: 0..<120, using: &generator))",
                cardholderName: "name-\(Int.random(in: 0..<5, using: &generator))")
        }
        var one = SlidingVelocity(queries: queries, parts: 1)
        var batched = SlidingVelocity(queries: queries, parts: 3)
        var single = SlidingVelocity(queries: queries, parts: 4)
        for event in events { one.add(event) }
        batched.add(contentsOf: Array(events[..<3_000]))
        batched.add(contentsOf: Array(events[3_000...]))
        for event in events { single.add(event) }
        for cut in [0, 2_000, 9_000] {
            let time = Self.start.addingTimeInterval(Double(cut))
            one.evict(before: time)
            batched.evict(before: time)
            single.evict(before: time)
            #expect(batched.eventCount == one.eventCount && single.eventCount == one.eventCount)
            #expect(batched.keyCount == one.keyCount && single.keyCount == one.keyCount)
            for probe in stride(from: cut, to: 14_400, by: 1_200) {
                let at = Self.start.addingTimeInterval(Double(probe))
                for id in 0..<40 {
                    let subject = VelocitySubject(
                        cardID: "card-\(id * 7)", deviceID: "device-\(id * 2)", customerID: "customer-\(id * 3)")
                    for query in queries {
                        let expected = one.value(of: query, subject: subject, at: at)
                        #expect(batched.value(of: query, subject: subject, at: at) == expected)
                        #expect(single.value(of: query, subject: subject, at: at) == expected)
                    }
                }
            }
        }
        #expect(one.eventCount > 0)
        // A batch under one key only, as the history read per key feeds it.
        var byCard = SlidingVelocity(queries: queries, parts: 3)
        var byCardOne = SlidingVelocity(queries: queries, parts: 1)
        byCard.add(contentsOf: events, under: .card)
        for event in events { byCardOne.add(event, under: .card) }
        #expect(byCard.eventCount == byCardOne.eventCount)
        #expect(byCard.eventCount == events.filter { $0.kind == .attempt }.count, "no query reads failures by card")
    }

    @Test(
        "Ids equal as strings are one id in every part count: the Kelvin sign and K, a precomposed and a combined letter"
    )
    func canonicallyEquivalentIdsAreOneIdInEveryPartCount() {
        let pairs = [("card-K", "card-\u{212A}"), ("card-\u{C5}", "card-A\u{30A}"), ("card-\u{E9}", "card-e\u{301}")]
        let query = VelocityQuery(metric: .attempts, key: .card, windowSeconds: 3_600)
        var events: [VelocityEvent] = []
        for index in 0..<6_000 {
            let pair = pairs[index % pairs.count]
            let card = index % 4 == 0 ? pair.0 : index % 4 == 1 ? pair.1 : "card-\(index)"
            events.append(
                VelocityEvent(kind: .attempt, time: Self.start.addingTimeInterval(Double(index % 50)), cardID: card))
        }
        let reference = InMemoryVelocityProvider(events: events)
        let at = Self.start.addingTimeInterval(3_000)
        for parts in [1, 2, 3, 8] {
            var batched = SlidingVelocity(queries: [query], parts: parts)
            batched.add(contentsOf: events)
            var single = SlidingVelocity(queries: [query], parts: parts)
            for event in events { single.add(event) }
            for (precomposed, decomposed) in pairs {
                // 6,000 / 3 pairs / 2 of every 4 indices: 1,000 events of each pair, all within the hour.
                for card in [precomposed, decomposed] {
                    let subject = VelocitySubject(cardID: card)
                    #expect(reference.value(of: query, subject: subject, at: at) == 1_000)
                    #expect(batched.value(of: query, subject: subject, at: at) == 1_000, "\(parts) parts")
                    #expect(single.value(of: query, subject: subject, at: at) == 1_000, "\(parts) parts")
                }
            }
        }
    }
}
