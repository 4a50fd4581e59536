import Foundation
import IssuerdCore
import Testing

/// `RFC3339.date`'s arithmetic path for `YYYY-MM-DDTHH:MM:SSZ` gives the instant Foundation's
/// ISO 8601 format style gives, and leaves every other text to it.
@Suite("RFC 3339 timestamps: the whole-seconds UTC short path agrees with the format style")
struct RFC3339Tests {
    @Test("Every day from 1970 to 2100, at several times of day")
    func everyDay() throws {
        let style = Date.ISO8601FormatStyle()
        var checked = 0
        for day in stride(from: 0, to: 47_847, by: 1) {
            let seconds = day * 86_400 + [0, 1, 43_199, 86_399][day % 4]
            let text = style.format(Date(timeIntervalSince1970: TimeInterval(seconds)))
            let fast = try #require(RFC3339.wholeSecondsUTC(text), "\(text)")
            #expect(fast == (try style.parse(text)), "\(text)")
            checked += 1
        }
        #expect(checked == 47_847)
    }

    @Test(
        "Other text is not taken the short way, and RFC3339.date answers as the format styles do",
        arguments: [
            "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-00-10T00:00:00Z", "2024-01-00T00:00:00Z",
            "2024-04-31T00:00:00Z",
            "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z", "2024-01-01T00:00:60Z", "1969-12-31T23:59:59Z",
            "2024-01-01t00:00:00z",
            "2024-01-01T00:00:00+09:00", "2024-01-01T00:00:00.5Z", "2024-1-01T00:00:00Z", "+024-01-01T00:00:00Z",
            "2024-01-01 00:00:00Z",
        ])
    func otherText(text: String) {
        #expect(RFC3339.wholeSecondsUTC(text) == nil)
        let expected =
            (try? Date.ISO8601FormatStyle().parse(text))
            ?? (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
        #expect(RFC3339.date(text) == expected)
    }

    @Test func leapDay() {
        #expect(RFC3339.wholeSecondsUTC("2024-02-29T12:00:00Z") == Date(timeIntervalSince1970: 1_709_208_000))
        #expect(RFC3339.wholeSecondsUTC("2000-02-29T00:00:00Z") == Date(timeIntervalSince1970: 951_782_400))
        #expect(RFC3339.wholeSecondsUTC("2100-02-29T00:00:00Z") == nil)
    }
}
