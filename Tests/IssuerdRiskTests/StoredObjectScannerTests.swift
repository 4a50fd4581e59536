import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdRisk

/// The backtest reads every stored `inputs` and `features` document through
/// ``StoredObjectScanner``; it must give, member by member, what the generic parser's members
/// pass gave (kept here as the reference), and refuse what it refused, on every shape a stored
/// document may take.
@Suite("Stored documents read by the specialised scanner")
struct StoredObjectScannerTests {
    /// The members pass as it read every stored document before the scanner: the generic
    /// ``JSONTreeParser`` for every name and value.
    static func reference(_ bytes: UnsafeBufferPointer<UInt8>, keys: StoredJSON.KeySet) -> [StoredJSON?]? {
        var found = [StoredJSON?](repeating: nil, count: keys.count)
        var parser = JSONTreeParser<StoredJSON>(bytes: bytes)
        parser.skipWhitespace()
        guard parser.take(UInt8(ascii: "{")) else { return nil }
        parser.skipWhitespace()
        if !parser.take(UInt8(ascii: "}")) {
            while true {
                parser.skipWhitespace()
                guard let key = parser.rawKey() else { return nil }
                parser.skipWhitespace()
                guard parser.take(UInt8(ascii: ":")) else { return nil }
                if let index = keys.index(of: key) {
                    guard let value = parser.value(depth: 1) else { return nil }
                    found[index] = value
                } else {
                    guard parser.skipValue(depth: 1) else { return nil }
                }
                parser.skipWhitespace()
                if parser.take(UInt8(ascii: ",")) { continue }
                guard parser.take(UInt8(ascii: "}")) else { return nil }
                break
            }
        }
        parser.skipWhitespace()
        return parser.position == bytes.count ? found : nil
    }

    static let keys = StoredJSON.KeySet(
        [
            "attributes", "device.id", "card.status", "card.age", "wallet.reason_codes", "checks",
            "attempts(card, 24h)", "", "a\\\"b",
        ]
        .map { Array($0.utf8) })

    /// Both readings of `text`, rendered, and the counts both give.
    static func compare(_ text: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBufferPointer { mutable in
            let buffer = UnsafeBufferPointer(mutable)
            let expected = reference(buffer, keys: keys)
            var found: [StoredJSON?] = [.string("left from the document before")]
            let taken = StoredJSON.members(of: buffer, keys: keys, into: &found)
            #expect(taken == (expected != nil), "\(text)", sourceLocation: sourceLocation)
            var counts: [Int?] = [7]
            let counted = StoredJSON.counts(of: buffer, keys: keys, into: &counts)
            #expect(counted == (expected != nil), "\(text)", sourceLocation: sourceLocation)
            guard let expected, taken, counted else { return }
            #expect(
                found.map(StoredJSONParseTests.render) == expected.map(StoredJSONParseTests.render), "\(text)",
                sourceLocation: sourceLocation)
            #expect(counts == expected.map { StoredJSON.count($0) }, "\(text)", sourceLocation: sourceLocation)
        }
    }

    @Test(
        "Gives the generic parser's members on every stored shape",
        arguments: [
            // As PostgreSQL stores `inputs` and `features` (json keeps the text, jsonb normalises it).
            #"{"device.id": "seed-dev-49379", "card.status": "active", "card.country": "GB", "device.active_tokens": 9}"#,
            #"{"attempts(card, 24h)": 0, "attempts(card, 72h)": 12, "failed_otps(card, 7d)": null}"#,
            // Nested attributes, arrays, checks, objects skipped unbuilt.
            #"{"attributes": {"card.status": "active", "wallet.reason_codes": ["A", "b\"c"]}, "checks": {"cvv": true}}"#,
            #"{"wallet.reason_codes": [], "other": {"deep": [[1, {"x": null}], "y"]}, "card.age": 86400}"#,
            // Strings with escapes, non-ASCII, invalid UTF-8 refused, control characters refused.
            #"{"device.id": "tab\there \\ \/ \b\f\n\r \u00e9 \ud83d\ude00", "card.status": "é😀"}"#,
            "{\"device.id\": \"bad \u{01} byte\"}", #"{"device.id": "\x"}"#, #"{"device.id": "unterminated}"#,
            #"{"device.id": "\ud83d alone"}"#,
            // Numbers: the 15-digit integer path and everything beside it.
            #"{"attempts(card, 24h)": -0, "card.age": 0, "device.id": -7}"#,
            #"{"attempts(card, 24h)": 999999999999999, "card.age": -999999999999999}"#,
            #"{"attempts(card, 24h)": 1000000000000000, "card.age": 12345678901234567890}"#,
            #"{"attempts(card, 24h)": 3.0, "card.age": 2.5, "device.id": 1e2, "card.status": -0.5E-3}"#,
            #"{"attempts(card, 24h)": 1e15, "card.age": 0.0, "device.id": -0.0}"#,
            #"{"attempts(card, 24h)": 01}"#, #"{"attempts(card, 24h)": -}"#, #"{"attempts(card, 24h)": 1.}"#,
            #"{"attempts(card, 24h)": 1e}"#, #"{"attempts(card, 24h)": +1}"#, #"{"attempts(card, 24h)": 0e5}"#,
            #"{"attempts(card, 24h)": 1e-400}"#, #"{"attempts(card, 24h)": 12x}"#, #"{"attempts(card, 24h)": 7 8}"#,
            // Literals, well formed or not.
            #"{"card.status": true, "card.age": false, "device.id": null}"#,
            #"{"card.status": tru}"#, #"{"card.status": nul}"#, #"{"card.status": falsey}"#,
            // Missing fields, empty names, repeated names (the last kept), names with escapes (refused).
            "{}", " { } ", #"{"": 1}"#, #"{"card.age": 1, "card.age": 2}"#, #"{"a\"b": 1}"#,
            #"{"unknown": 1}"#,
            // Whitespace everywhere, trailing text, not an object, truncation.
            " \t\r\n{ \"card.age\" \n:\t 5 , \"device.id\" : \"x\" } \n", #"{"card.age": 1} x"#, "[1]", "\"s\"", "",
            "{", #"{"card.age": 1"#, #"{"card.age": 1,}"#, #"{"card.age" 1}"#, #"{card: 1}"#,
        ])
    func sameMembers(text: String) {
        Self.compare(text)
    }

    @Test("Gives the generic parser's members on generated documents of every value shape")
    func generated() {
        // Deterministic: each document a few members drawn from names and values of every kind.
        var generator = SeededGenerator(seed: 20_261_207)
        let names = ["device.id", "card.status", "card.age", "attributes", "checks", "attempts(card, 24h)", "x", ""]
        let values = [
            "0", "-0", "7", "-12", "999999999999999", "1000000000000000", "3.25", "-1e3", "2E+2", "1.0", "00", "1e400",
            "true", "false", "null", "\"\"", "\"plain\"", "\"é\"", "\"a\\\"b\"", "\"\\u0041\"", "[]",
            "[1, \"x\", null]",
            "{}", "{\"card.age\": 5}", "{\"a\": [{}]}", "-", "\"open", "nan",
        ]
        let spaces = ["", " ", "\n", " \t "]
        for _ in 0..<3_000 {
            var text = spaces[Int(generator.next() % 4)] + "{"
            let count = Int(generator.next() % 5)
            for member in 0..<count {
                if member > 0 { text += "," + spaces[Int(generator.next() % 4)] }
                text += "\"\(names[Int(generator.next() % UInt64(names.count))])\"" + spaces[Int(generator.next() % 4)]
                text += ":" + spaces[Int(generator.next() % 4)] + values[Int(generator.next() % UInt64(values.count))]
            }
            text += spaces[Int(generator.next() % 4)] + "}"
            Self.compare(text)
        }
    }
}
