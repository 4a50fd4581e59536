import Foundation
import Testing

@testable import IssuerdCore

@Suite("Civil dates by arithmetic")
struct CivilDateTests {
    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    /// Every 17th day from 1600 to 2400 (leap centuries, both sides of 1970) agrees with
    /// Foundation's Gregorian calendar in both directions.
    @Test func agreesWithFoundation() {
        let first = CivilDate.days(year: 1600, month: 1, day: 1)
        let last = CivilDate.days(year: 2400, month: 12, day: 31)
        for days in stride(from: first, through: last, by: 17) {
            let date = Date(timeIntervalSince1970: TimeInterval(days) * 86_400)
            let parts = Self.utc.dateComponents([.year, .month, .day], from: date)
            let civil = CivilDate.date(days: days)
            #expect(civil.year == parts.year && civil.month == parts.month && civil.day == parts.day, "\(days)")
            #expect(CivilDate.days(year: civil.year, month: civil.month, day: civil.day) == days)
        }
    }

    @Test func knownDays() {
        #expect(CivilDate.days(year: 1970, month: 1, day: 1) == 0)
        #expect(CivilDate.days(year: 1969, month: 12, day: 31) == -1)
        #expect(CivilDate.days(year: 2000, month: 3, day: 1) == 11_017)
        #expect(CivilDate.date(days: 0) == (1970, 1, 1))
        #expect(CivilDate.date(days: 11_016) == (2000, 2, 29))
        // Year 0 is 1 BC, a leap year in the proleptic calendar.
        #expect(CivilDate.date(days: CivilDate.days(year: 0, month: 2, day: 29)) == (0, 2, 29))
    }

    @Test(arguments: [
        (2024, 2, 29, true), (2023, 2, 29, false), (2000, 2, 29, true), (1900, 2, 29, false),
        (2024, 4, 31, false), (2024, 12, 31, true), (2024, 13, 1, false), (2024, 0, 1, false), (2024, 1, 0, false),
    ])
    func validity(year: Int, month: Int, day: Int, valid: Bool) {
        #expect(CivilDate.isValid(year: year, month: month, day: day) == valid)
    }
}
