import Foundation
import Testing

@testable import IssuerdRisk

/// The backtest reads the export's timestamps without ICU (`TimestampParser.parseUTC`); it must
/// read them as `ISO8601DateFormatter` does, and leave everything else to it.
@Suite("Timestamps of the backtest input")
struct TimestampParserTests {
    static func reference() -> ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }

    @Test("Export timestamps read the same as through ISO8601DateFormatter, across years, leap days and milliseconds")
    func sameAsFormatter() throws {
        let reference = Self.reference()
        var generator = SystemRandomNumberGenerator()
        // 1970 to 2100 in random steps, plus the edges of leap days and years.
        var instants = (0..<2_000).map { _ in Double(Int.random(in: 0..<4_102_444_800_000, using: &generator)) / 1_000 }
        instants += [
            0, 951_782_400, 951_868_799.999, 1_709_164_800, 1_709_251_199.5, 4_107_542_399.001, 1_740_823_200.1,
        ]
        for instant in instants {
            let text = reference.string(from: Date(timeIntervalSince1970: instant))
            let expected = try #require(reference.date(from: text))
            let parsed = try #require(TimestampParser.parseUTC(text), "\(text)")
            #expect(abs(parsed.timeIntervalSince1970 - expected.timeIntervalSince1970) < 0.000_001, "\(text)")
            #expect(TimestampParser().parse(text) == parsed)
        }
        #expect(TimestampParser.parseUTC("2025-03-01T12:00:00Z") == Date(timeIntervalSince1970: 1_740_830_400))
        #expect(TimestampParser.parseUTC("2025-03-01T12:00:00.5Z") == Date(timeIntervalSince1970: 1_740_830_400.5))
        #expect(TimestampParser.parseUTC("2025-03-01T12:00:00.25Z") == Date(timeIntervalSince1970: 1_740_830_400.25))
    }

    @Test("Other shapes and impossible dates go to the formatter (which still reads offsets) or nowhere")
    func fallBack() {
        for text in [
            "2025-02-29T00:00:00Z", "2025-13-01T00:00:00Z", "2025-03-01T24:00:00Z", "2025-03-01T12:60:00Z",
            "2025-03-01T12:00:00+01:00", "2025-03-01T12:00:00.1234Z", "2025-03-01 12:00:00Z", "2025-03-01T12:00:0xZ",
            "2025-03-01T12:00:00.Z", "２025-03-01T12:00:00Z", "",
        ] {
            #expect(TimestampParser.parseUTC(text) == nil, "\(text)")
        }
        #expect(TimestampParser().parse("2025-03-01T13:00:00+01:00") == Date(timeIntervalSince1970: 1_740_830_400))
        #expect(TimestampParser().parse("2024-02-29T00:00:00Z") == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(TimestampParser().parse("not a time") == nil)
    }
}
