import Foundation
import IssuerdCore
import Testing

@Suite("JSONValue written directly")
struct JSONValueTextTests {
    static let samples: [JSONValue] = [
        .null, true, 0, -42, 7, 1_234_567_890, .int(Int.max), .int(Int.min), 3.25, 1e-7, "",
        "quote \" backslash \\ newline \n tab \t control \u{01} 홍길동 /",
        [], [1, "a", nil, [true]], [:],
        ["b": 1, "a": ["nested": [1.5, "x"]], "": .null, "한글": "값"],
    ]

    @Test("Round-trips through JSONDecoder to the same value", arguments: samples)
    func roundTrip(value: JSONValue) throws {
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(value.jsonText.utf8))
        #expect(decoded == value)
    }

    @Test("The unordered form round-trips too", arguments: samples)
    func unorderedRoundTrip(value: JSONValue) throws {
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(value.unorderedJSONText.utf8))
        #expect(decoded == value)
    }

    @Test("Integers are written digit for digit")
    func integers() {
        for number in [0, 1, -1, 9, 10, -10, 99, 100, Int.max, Int.min, Int.min + 1] {
            #expect(JSONValue.int(number).jsonText == String(number))
        }
    }

    @Test("Keys are sorted and non-finite numbers become null")
    func shape() {
        #expect(JSONValue.object(["b": 1, "a": 2]).jsonText == #"{"a":2,"b":1}"#)
        #expect(JSONValue.array([.double(.infinity), .double(.nan)]).jsonText == "[null,null]")
        #expect(JSONValue.string("\u{1F}").jsonText == #""\u001f""#)
    }
}
