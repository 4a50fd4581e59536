import Foundation
import IssuerdRisk
import Testing

/// The export of changed attempts is safe to open in a spreadsheet and never holds a card number.
struct ChangedAttemptsCSVTests {
    static func change(
        id: String = "6f1c2a4e-0b7d-4c55-9a51-3c9d2f0e8b11", current: [String], candidate: [String]
    )
        -> Backtest.ChangedAttempt
    {
        Backtest.ChangedAttempt(
            attemptID: id, time: Date(timeIntervalSince1970: 1_740_823_800.5), channel: "tsp", cardID: "c1",
            before: .green, after: .orange, currentOnly: current, candidateOnly: candidate)
    }

    @Test func headerAndOneLine() {
        #expect(ChangedAttemptsCSV.header == "attempt_id,time,channel,card_last_four,before,after,rules\r\n")
        #expect(
            ChangedAttemptsCSV.line(Self.change(current: [], candidate: ["retry", "burst"]), lastFour: "4242")
                == "6f1c2a4e-0b7d-4c55-9a51-3c9d2f0e8b11,2025-03-01T10:10:00.500Z,tsp,4242,green,orange,"
                + "\"candidate: retry, burst; current: -\"\r\n")
        #expect(
            ChangedAttemptsCSV.line(Self.change(current: ["x"], candidate: []), channel: "mdes", lastFour: nil)
                .contains(",mdes,,green,orange,candidate: -; current: x\r\n"))
    }

    @Test(
        "A cell that a spreadsheet would run as a formula is prefixed",
        arguments: ["=HYPERLINK(\"http://x\")", "+1+2", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"])
    func formulasDefused(_ text: String) {
        let cell = ChangedAttemptsCSV.cell(text)
        let unquoted = cell.hasPrefix("\"") ? String(cell.dropFirst()) : cell
        #expect(unquoted.hasPrefix("'"), "\(cell)")
        // And through a line: a rule id starting with = reaches the file defused.
        let line = ChangedAttemptsCSV.line(Self.change(id: text, current: [], candidate: []), lastFour: nil)
        #expect(!line.hasPrefix("="), "\(line)")
        #expect(!line.hasPrefix("+") && !line.hasPrefix("-") && !line.hasPrefix("@"))
    }

    @Test func quotingFollowsRFC4180() {
        #expect(ChangedAttemptsCSV.cell("plain") == "plain")
        #expect(ChangedAttemptsCSV.cell("a,b") == "\"a,b\"")
        #expect(ChangedAttemptsCSV.cell("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(ChangedAttemptsCSV.cell("two\nlines") == "\"two\nlines\"")
        #expect(ChangedAttemptsCSV.cell("=a,b") == "\"'=a,b\"")
        // A CR LF pair is one Character in Swift; it is quoted all the same.
        #expect(ChangedAttemptsCSV.cell("two\r\nlines") == "\"two\r\nlines\"")
        #expect(ChangedAttemptsCSV.cell("é,è") == "\"é,è\"")
    }

    /// The rule by Unicode properties that ``ChangedAttemptsCSV/containsCardNumber(_:)`` states,
    /// as written before its ASCII path: every ASCII text must get the same answer from both.
    static func byScalarProperties(_ text: String) -> Bool {
        if text.utf8.count == 36, UUID(uuidString: text) != nil { return false }
        var run = 0
        for scalar in text.unicodeScalars {
            if scalar.properties.numericType == .decimal {
                run += 1
                if run >= 12 { return true }
            } else if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
                run = 0
            }
        }
        return false
    }

    @Test func asciiPathAgreesWithScalarProperties() {
        var generator = SystemRandomNumberGenerator()
        // Digits weighted up so that about half the texts hold a run of twelve.
        let alphabet = Array("0123456789012345678901234567890123456789 -./_:,aZz@`{[")
        for _ in 0..<20_000 {
            let text = String(
                (0..<Int.random(in: 0...40, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            #expect(ChangedAttemptsCSV.containsCardNumber(text) == Self.byScalarProperties(text), "\(text)")
        }
        for code in 0..<128 {
            let text = "411111" + String(UnicodeScalar(UInt8(code))) + "111111"
            #expect(ChangedAttemptsCSV.containsCardNumber(text) == Self.byScalarProperties(text), "\(code)")
        }
    }

    @Test(
        "No cell holds a full card number, whatever separates its digits",
        arguments: [
            "4111111111111111", "4111 1111 1111 1111", "4111-1111-1111-1111", "pan 4111.1111.1111.1111 here",
            "５５５５５５５５５５５５４４４４",
        ])
    func cardNumbersRemoved(_ text: String) {
        #expect(ChangedAttemptsCSV.cell(text) == ChangedAttemptsCSV.removed)
        let line = ChangedAttemptsCSV.line(
            Self.change(id: text, current: ["rule_" + text], candidate: []), channel: text, lastFour: text)
        #expect(!line.contains("1111"), "\(line)")
        #expect(!line.contains("４４４４"), "\(line)")
    }

    @Test func lastFourOnlyWhenFourDigits() {
        for bad in ["411111111111", "12345", "12a4", "", "１２３４"] {
            let line = ChangedAttemptsCSV.line(Self.change(current: [], candidate: []), lastFour: bad)
            #expect(line.contains(",tsp,,green,"), "\(bad): \(line)")
        }
        #expect(ChangedAttemptsCSV.line(Self.change(current: [], candidate: []), lastFour: "0042").contains(",0042,"))
        // Not card numbers: an attempt id, a time, short digit runs.
        #expect(
            ChangedAttemptsCSV.cell("6f1c2a4e-0b7d-4c55-9a51-3c9d2f0e8b11") == "6f1c2a4e-0b7d-4c55-9a51-3c9d2f0e8b11")
        #expect(ChangedAttemptsCSV.cell("2025-03-01T10:10:00.500Z") == "2025-03-01T10:10:00.500Z")
    }

    @Test func timestampsInUTCWithMilliseconds() {
        #expect(ChangedAttemptsCSV.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(ChangedAttemptsCSV.timestamp(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00.000Z")
        #expect(ChangedAttemptsCSV.timestamp(Date(timeIntervalSince1970: -1.5)) == "1969-12-31T23:59:58.500Z")
        #expect(
            ChangedAttemptsCSV.timestamp(Date(timeIntervalSince1970: 4_102_444_799.999)) == "2099-12-31T23:59:59.999Z")
    }
}
