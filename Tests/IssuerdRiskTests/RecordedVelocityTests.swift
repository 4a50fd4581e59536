import Foundation
import Testing

@testable import IssuerdRisk

/// Which velocity value the backtest replays (docs/rules.md, "Backtest input"): a whole number
/// the decision recorded under the query's description; otherwise the count from history.
@Suite("Recorded velocity values in a replay")
struct RecordedVelocityTests {
    static let day = VelocityQuery(metric: .attempts, key: .card, windowSeconds: 86_400)
    static let hour = VelocityQuery(metric: .attempts, key: .card, windowSeconds: 3_600)
    static let devices = VelocityQuery(metric: .distinctCards, key: .device, windowSeconds: 86_400)

    @Test(
        "Whole numbers are recorded; null, fractions, strings and absent queries are not",
        arguments: [
            (#"{"attempts(card, 24h)": 4, "attempts(card, 1h)": null, "distinct_cards(device, 24h)": 2.5}"#, "4 - -"),
            (#"{"attempts(card, 24h)": 4.0, "attempts(card, 1h)": "3", "distinct_cards(device, 24h)": 0}"#, "4 - 0"),
            (
                #"[{"query": "attempts(card, 1h)", "value": 7}, {"name": "attempts(card, 24h)", "value": 1}, {"value": 3}]"#,
                "1 7 -"
            ),
            (#"{}"#, "- - -"), (#"[]"#, "- - -"), ("not json", "- - -"), (#"{"attempts(card, 1d)": 5}"#, "- - -"),
        ])
    func recordedValues(features: String, expected: String) {
        var table = RecordedVelocity(queries: [Self.day, Self.hour, Self.devices])
        table.append(storedFeatures: features)
        #expect(table.count == 1)
        #expect(
            (0..<3).map { table.value(row: 0, column: $0).map(String.init) ?? "-" }.joined(separator: " ") == expected)
    }

    @Test("A replay takes the recorded value and counts only the missing ones from history")
    func recordedWinsOverHistory() throws {
        let start = Date(timeIntervalSince1970: 1_740_823_200)
        let events = (0..<3).map {
            VelocityEvent(kind: .attempt, time: start.addingTimeInterval(Double($0) * 60), cardID: "c1", deviceID: "d1")
        }
        let history = InMemoryVelocityProvider(events: events)
        let attempt = AttemptLog.Attempt(
            id: "a", time: start.addingTimeInterval(600), subject: VelocitySubject(cardID: "c1", deviceID: "d1"),
            input: RiskInput(), line: 1)
        var table = RecordedVelocity(queries: [Self.day, Self.devices])
        table.append(storedFeatures: #"{"attempts(card, 24h)": 9}"#)
        // The ruleset asks for a query the table does not hold at all (1 h) and one it holds no value for.
        let lookup = RecordedVelocity.Lookup([Self.hour, Self.day, Self.devices], in: table)
        #expect(lookup.values(attempt: 0, attempt, history: history) == [3, 9, 1])
        #expect(
            RecordedVelocity.Lookup([Self.hour, Self.day, Self.devices], in: nil).values(
                attempt: 0, attempt, history: history) == [3, 3, 1])
    }

    @Test("Rows appended one after another from bytes: each row holds only its own document's values")
    func rowsInSequenceKeepNothingOfTheLast() {
        let documents = [
            #"{"attempts(card, 24h)": 4, "attempts(card, 1h)": 2, "distinct_cards(device, 24h)": 1}"#,
            #"{"attempts(card, 1h)": 5}"#,  // after a fuller one: the other two are not recorded here
            "not json",
            #"[{"query": "attempts(card, 24h)", "value": 7}]"#,
            #"{}"#,
        ]
        var table = RecordedVelocity(queries: [Self.day, Self.hour, Self.devices])
        for document in documents { Array(document.utf8).withUnsafeBufferPointer { table.append(storedFeatures: $0) } }
        #expect(table.count == documents.count)
        #expect(
            (0..<documents.count).map { table.row($0) } == [
                [4, 2, 1], [nil, 5, nil], [nil, nil, nil], [7, nil, nil], [nil, nil, nil],
            ])
    }

    @Test("Values filled into one buffer per attempt are each attempt's own")
    func filledValuesAreEachAttemptsOwn() {
        let start = Date(timeIntervalSince1970: 1_740_823_200)
        let history = InMemoryVelocityProvider(events: [
            VelocityEvent(kind: .attempt, time: start, cardID: "c1", deviceID: "d1")
        ])
        var table = RecordedVelocity(queries: [Self.day])
        table.append(storedFeatures: #"{"attempts(card, 24h)": 9}"#)
        table.append(storedFeatures: #"{}"#)
        let lookup = RecordedVelocity.Lookup([Self.day, Self.hour], in: table)
        let first = AttemptLog.Attempt(
            id: "a", time: start.addingTimeInterval(60), subject: VelocitySubject(cardID: "c1"), input: RiskInput(),
            line: 1)
        let second = AttemptLog.Attempt(
            id: "b", time: start.addingTimeInterval(120), subject: VelocitySubject(cardID: "c2"), input: RiskInput(),
            line: 2)
        var values: [Int?] = []
        lookup.fill(&values, attempt: 0, first, history: history)
        #expect(values == [9, 1])
        lookup.fill(&values, attempt: 1, second, history: history)
        #expect(values == [0, 0])  // c2 has no history; nothing of the first attempt's is left
        #expect(values == lookup.values(attempt: 1, second, history: history))
    }
}
