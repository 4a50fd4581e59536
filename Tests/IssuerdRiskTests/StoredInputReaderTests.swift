import Foundation
import Testing

@testable import IssuerdRisk

/// Stored `inputs` read one after another from their bytes, as a backtest's read does
/// (``AttemptLog/StoredInputReader``): each attempt gets its own document's attributes only,
/// and what `AttemptLog.input(storedInputs:time:)` gives for the same text.
@Suite("Stored inputs read in sequence")
struct StoredInputReaderTests {
    static let time = Date(timeIntervalSince1970: 1_740_823_200)

    static let documents = [
        #"{"device.id": "dev-1", "card.network": "visa", "device.active_tokens": 2, "wallet.reason_codes": ["DEVICE_RECENTLY_RESET"], "customer.name_match_score": 72}"#,
        #"{"card.network": "mastercard"}"#,  // after a fuller one: nothing else is set
        #"{"attributes": {"device.id": "dev-2", "card.age": 86400}, "other": true}"#,
        #"{"device.id": "dev-3", "not.an.attribute": 1}"#,
        #"{"device.active_tokens": "two"}"#,  // a bad value: named
        "not json",
        #"{"device.id": "dev-\u0034"}"#,  // an escape: the general path
        #"{}"#,
    ]

    @Test func eachDocumentGivesItsOwnInput() {
        var reader = AttemptLog.StoredInputReader()
        var results: [Result<RiskInput, AttemptLogError>] = []
        for document in Self.documents {
            results.append(
                Array(document.utf8).withUnsafeBufferPointer { reader.input(storedInputs: $0, time: Self.time) })
        }
        func input(_ index: Int) -> RiskInput? { try? results[index].get() }
        #expect(input(0)?.deviceID == "dev-1")
        #expect(input(0)?.deviceActiveTokens == 2)
        #expect(input(0)?.walletReasonCodes == ["DEVICE_RECENTLY_RESET"])
        var second = RiskInput()
        second.time = Self.time
        second.cardNetwork = .mastercard
        #expect(input(1) == second)
        #expect(input(2)?.deviceID == "dev-2")
        #expect(input(2)?.cardAge == 86_400)
        #expect(input(2)?.cardNetwork == nil)
        #expect(input(3)?.deviceID == "dev-3")
        #expect(input(3)?.deviceActiveTokens == nil)
        if case .failure(let error) = results[4] {
            #expect(error.message.contains("device.active_tokens"))
        } else {
            Issue.record("a bad value passed")
        }
        if case .failure(let error) = results[5] {
            #expect(error.message == "inputs are not JSON")
        } else {
            Issue.record("not JSON passed")
        }
        #expect(input(6)?.deviceID == "dev-4")
        #expect(input(7)?.deviceID == nil)
        // The same as each text read on its own, by a reader that read nothing before.
        for (document, result) in zip(Self.documents, results) {
            let alone = AttemptLog.input(storedInputs: document, time: Self.time)
            switch (result, alone) {
            case (.success(let a), .success(let b)): #expect(a == b, "\(document)")
            case (.failure(let a), .failure(let b)): #expect(a.message == b.message, "\(document)")
            default: Issue.record("\(document): \(result) read alone gave \(alone)")
            }
        }
    }
}
