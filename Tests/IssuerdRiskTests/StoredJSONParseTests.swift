import Foundation
import Testing

@testable import IssuerdRisk

/// The backtest parses stored `inputs` and `features` with ``StoredJSON/parse(_:)``'s fast pass;
/// it must give what `JSONDecoder` gives, and leave to it (or refuse, as it does) everything else.
@Suite("JSON values of stored attempts")
struct StoredJSONParseTests {
    /// A canonical rendering to compare values (`StoredJSON` is not Equatable; object members sorted).
    static func render(_ value: StoredJSON?) -> String {
        switch value {
        case nil: "<none>"
        case .null?: "null"
        case .bool(let flag)?: "\(flag)"
        case .number(let number)?: "n\(number)"
        case .string(let text)?: "s" + text.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: ".")
        case .array(let items)?: "[" + items.map { render($0) }.joined(separator: ",") + "]"
        case .object(let members)?:
            "{"
                + members.sorted { $0.key < $1.key }.map { "\(render(.string($0.key))):\(render($0.value))" }
                .joined(separator: ",") + "}"
        }
    }

    static func decoder(_ text: String) -> StoredJSON? {
        try? JSONDecoder().decode(StoredJSON.self, from: Data(text.utf8))
    }

    @Test(
        "Gives JSONDecoder's value",
        arguments: [
            // What PostgreSQL's jsonb text output looks like.
            #"{"card.age": 86400, "card.status": "active", "wallet.device_score": 2.5, "customer.phone_last4_match": false}"#,
            #"{"attributes": {"wallet.reason_codes": ["DEVICE_RECENTLY_LOST", "b, {odd} one"], "device.locale": "fr_FR é"}}"#,
            #"{"attempts(card, 24h)": 3, "attempts(card, 1h)": null, "distinct_cards(device, 24h)": 1e2, "x": -0.5E-3, "y": 0}"#,
            #"[{"query": "attempts(card, 24h)", "value": 2}, {"name": "token_deletions(card, 30d)", "value": 12345678901234}]"#,
            // Escapes, surrogate pairs, raw UTF-8, whitespace, empty containers, nesting.
            #"{"a\"b": "tab\there \\ \/ \b\f\n\r \u00e9 \u20AC \ud83d\ude00 😀", "": [], "e": {}, "n": [[[1]], {"k": [true, null]}]}"#,
            " \t\r\n[1 , 2 ,\"x\"] \n",
            // Integers either side of the 15-digit fast path, and zeros.
            "[0, -0, 7, -7, 999999999999999, -999999999999999, 1000000000000000, 9007199254740993, 12345678901234567890, 10, 1e0, -0.0]",
            // Not taken by the fast pass, accepted by JSONDecoder: the same value either way.
            "{\"a\": 1,}",
            "\"just a string\"", "true", "null", "-12", "1.0e+308",
            // Zeros with an exponent that JSONDecoder takes, and the smallest numbers a Double holds.
            "[0e-400, -0.0e-999, 0e+1, 0e400, 1e-310, 4.9e-324, 2.5e-324]",
        ])
    func sameAsDecoder(text: String) {
        let fast = StoredJSON.parse(text)
        #expect(fast != nil)
        #expect(Self.render(fast) == Self.render(Self.decoder(text)))
    }

    @Test(
        "Refuses what JSONDecoder refuses",
        arguments: [
            "", "{", "{\"a\" 1}", "[1 2]", "01", "1.", ".5", "-", "+1", "1e", "tru", "nul", "\"unterminated",
            "\"bad \\x escape\"", "\"control \u{01} char\"", "{\"a\": 1} trailing", "[1]]", "{1: 2}", "\"\\u12\"",
            // 0 to strtod, refused by JSONDecoder as a Double (found by fuzzing): not zero but too small,
            // and zeros with an exponent whose last bytes its zero check reads out of order.
            "1e-400", "[-1e-400]", "{\"x\": 2.4e-324}", "12345600000000000288056e-708",
            "0." + String(repeating: "0", count: 400) + "1",
            "0e5", "[0.000e5]", "{\"x\": 0.00e2}", "0E2",
        ])
    func refusesNonJSON(text: String) {
        #expect(Self.decoder(text) == nil, "the reference accepts \(text)")
        #expect(StoredJSON.parse(text) == nil)
    }

    @Test("Leaves to JSONDecoder what its fast pass does not take: deep nesting, a lone surrogate")
    func fallsBack() {
        let deep = String(repeating: "[", count: 100) + "1" + String(repeating: "]", count: 100)
        #expect(Self.render(StoredJSON.parse(deep)) == Self.render(Self.decoder(deep)))
        #expect(StoredJSON.parse(deep) != nil)
        let lone = #""\ud83d alone""#
        #expect(Self.render(StoredJSON.parse(lone)) == Self.render(Self.decoder(lone)))
    }
}
