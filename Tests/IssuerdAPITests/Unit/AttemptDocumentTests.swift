import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdRisk
import IssuerdStorage
import Testing

@testable import IssuerdAPI

/// What a decision writes straight into the attempt's text must be what the dictionaries it
/// replaced gave: the stored `inputs` and `features` (read by explain, the console and the
/// backtest), and the bytes under the cardholder-name hash (compared with hashes already stored).
@Suite("Attempt documents written straight from the decision")
struct AttemptDocumentTests {
    /// Every assignable attribute set, through its own type: texts with quotes, escapes and
    /// non-ASCII, whole and fractional numbers, every enumeration's last name.
    static func filledInput() -> RiskInput {
        var input = RiskInput()
        for (index, attribute) in AttributeCatalog.all.enumerated() {
            let value: RiskValue
            switch attribute.type {
            case .bool: value = .bool(index % 2 == 0)
            case .number: value = .number(index % 3 == 0 ? Double(index) : Double(index) + 0.25)
            case .string: value = .string("Zoë \"\(attribute.name)\" \\ \t\u{1F600}")
            case .duration: value = .duration(index % 2 == 0 ? 86_400 : 1_234.5)
            case .enumeration(let domain): value = .string(domain.names[domain.names.count - 1])
            case .stringSet: value = .strings(["a", "b\"c"])
            }
            _ = attribute.assign(value, to: &input)
        }
        input.time = Date(timeIntervalSince1970: 1_764_000_000.5)
        return input
    }

    static func parsed(_ document: AttemptDocument) -> JSONValue? {
        switch document {
        case .members(let members): return .object(members)
        case .written(let text): return Array(text.utf8).withUnsafeBufferPointer { JSONValue.parse(bytes: $0) }
        }
    }

    @Test func attributesParseToTheDictionary() throws {
        for input in [Self.filledInput(), RiskInput()] {
            let document = RiskInputBuilder.attributesDocument(of: input)
            guard case .written = document else {
                Issue.record("no NUL in the input: the text should be written")
                continue
            }
            #expect(Self.parsed(document) == .object(RiskInputBuilder.attributes(of: input)))
        }
        // Something was written for each kind, not only nulls.
        let filled = try #require(Self.parsed(RiskInputBuilder.attributesDocument(of: Self.filledInput())))
        guard case .object(let members) = filled else { throw CancellationError() }
        #expect(members.values.contains { if case .string = $0 { true } else { false } })
        #expect(members.values.contains { if case .double = $0 { true } else { false } })
        #expect(members.values.contains { if case .array = $0 { true } else { false } })
        #expect(members["request.hour_utc"] == nil)  // derived: left out, as before
    }

    @Test func aNULTakesTheDictionaryThatIsCleaned() throws {
        var input = RiskInput()
        input.deviceID = "dev\u{0}ice"
        let document = RiskInputBuilder.attributesDocument(of: input)
        guard case .members(let members) = document else {
            Issue.record("a NUL escape must not be stored as written")
            return
        }
        #expect(members == RiskInputBuilder.attributes(of: input))
        #expect(!AttemptStore.document(document).rawJSON.contains("\\u0000"))
    }

    @Test func featuresParseToTheDictionary() throws {
        let rules = """
            rule busy
              title   "Busy"
              outcome yellow
              reason  BUSY
              owner   o
              when    attempts(card, 24h) > 3 or distinct_cards(device, 7d) >= 2 or failed_otps(card, 7d) > 1
            end
            """
        let ruleset = try RulesetCompiler.compile(
            [RulesetFile(path: "t.rules", contents: rules)], contentHasher: RulesetContent.fnv1a64)
        let queries = ruleset.velocityQueries
        #expect(queries.count == 3)
        #expect(ruleset.velocityDescriptions == queries.map(\.description))
        for values in [[3, nil, 0], [nil, nil, nil], [Int.max, -1, 12]] as [[Int?]] {
            var expected: [String: JSONValue] = [:]
            for (query, value) in zip(queries, values) { expected[query.description] = value.map { .int($0) } ?? .null }
            #expect(
                Self.parsed(RiskService.featuresDocument(ruleset.velocityDescriptions, values)) == .object(expected))
        }
        #expect(Self.parsed(RiskService.featuresDocument([], [])) == .object([:]))
    }

    /// The hashed bytes as they were computed before the ASCII path.
    static func unicodeInput(_ name: String) -> [UInt8] {
        Array("name:\(name.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " "))".utf8)
    }

    @Test func nameHashInputMatchesTheUnicodePath() {
        let names = [
            "", " ", "JANE DOE", "  Jane   Doe  ", "jane\tdoe", "JANE\r\nDOE", "A\u{0B}B\u{0C}C", "O'BRIEN-SMITH JR.",
            "x",
            "José Núñez", "ÅSA ÖBERG", "JANE\u{00A0}DOE", "ИВАН ИВАНОВ", "Straße", "İSTANBUL", "ǅ", "A\u{2003}B",
            "\u{1F600} DOE",
        ]
        for name in names {
            #expect(RiskService.nameHashInput(name) == Self.unicodeInput(name), "\(name.debugDescription)")
        }
        // Random ASCII, whitespace and case included.
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("aZ \t\n\r\u{0B}\u{0C}.-'09~AZaz@[`{".unicodeScalars)
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...24, using: &generator)
            let name = String(
                String.UnicodeScalarView((0..<length).map { _ in alphabet.randomElement(using: &generator)! }))
            #expect(RiskService.nameHashInput(name) == Self.unicodeInput(name), "\(name.debugDescription)")
        }
    }
}
