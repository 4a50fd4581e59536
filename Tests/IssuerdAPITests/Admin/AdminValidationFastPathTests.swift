import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdStorage
import Testing

@testable import IssuerdAPI

/// The printable-ASCII path of `AdminValidation.text` and the arithmetic month of
/// `AdminValidation.expiration` answer exactly what the general (Foundation) paths answer.
@Suite("Admin validation: the ASCII and arithmetic short paths agree with Foundation's")
struct AdminValidationFastPathTests {
    private func outcome(_ body: () throws -> String) -> String {
        do { return "ok:" + (try body()) } catch let error as Refusal { return "error:" + error.message } catch {
            return "other"
        }
    }

    @Test(
        "text: the same result or error as trimming with CharacterSet.whitespaces",
        arguments: [
            "KIM MINJI", "  KIM  ", " ", "", "a", String(repeating: "x", count: 8), String(repeating: "x", count: 9),
            "  " + String(repeating: "y", count: 8) + " ", "~!@#$%^&*()_+{}|:<>?`-=[];',./\"\\", "tab\there", "\tlead",
            "DEL\u{7F}",
            "김민지", " 김 ", "\u{00A0}nbsp\u{00A0}", "\u{3000}wide", "e\u{301}", "line\nbreak", "\r\n",
        ])
    func text(value: String) {
        for allowEmpty in [false, true] {
            let fast = outcome { try AdminValidation.text(value, field: "f", maxLength: 8, allowEmpty: allowEmpty) }
            let general = outcome {
                try AdminValidation.unicodeText(value, field: "f", maxLength: 8, allowEmpty: allowEmpty)
            }
            #expect(fast == general, "\(value.debugDescription) allowEmpty \(allowEmpty)")
        }
    }

    @Test(
        "monthNumber: the UTC year and month Foundation's Gregorian calendar gives, around every month end from 1970 to 2100"
    )
    func monthNumber() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var checked = 0
        for year in 1970...2100 {
            for month in 1...12 {
                let start = calendar.date(from: DateComponents(year: year, month: month, day: 1))!
                for offset: TimeInterval in [-1, -0.000_001, 0, 0.5, 86_399, 15 * 86_400] {
                    let date = start.addingTimeInterval(offset)
                    let today = calendar.dateComponents([.year, .month], from: date)
                    #expect(AdminValidation.monthNumber(date) == today.year! * 12 + today.month!, "\(date)")
                    checked += 1
                }
            }
        }
        #expect(checked == 131 * 12 * 6)
        // Outside the arithmetic's range, the calendar answers.
        let early = Date(timeIntervalSince1970: -86_400 * 400)
        #expect(AdminValidation.monthNumber(early) == 1968 * 12 + 11)
    }
}
