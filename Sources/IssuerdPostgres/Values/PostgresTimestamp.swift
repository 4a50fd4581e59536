import Foundation
import IssuerdCore

/// The column types a `Date` decodes from (a constant: a set literal at the call builds one per cell).
private let timestampTypes: Set<PostgresDataType> = [.timestamptz, .timestamp]

extension Date: PostgresEncodable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .timestamptz }

    /// Sent in binary: microseconds since 2000-01-01 00:00 UTC, the instant the text form
    /// (``PostgresTimestamp/format(_:)``) names, rounded the same way, and `±infinity` where
    /// that is. PostgreSQL then has no timestamp text to parse (a decision binds a dozen), and
    /// no `DateStyle` or `TimeZone` setting can change what it reads.
    public var postgresBindValue: PostgresBindValue { .binary(PostgresTimestamp.binary(self)) }

    /// Reads any `timestamptz` in ISO output style, whatever the session time zone; a
    /// `timestamp` without time zone is taken as UTC. `infinity` and `-infinity` become
    /// `Date.distantFuture` and `Date.distantPast`.
    public init(postgresCell cell: PostgresCell) throws(PostgresDecodingFailure) {
        try cell.require(timestampTypes)
        self = try PostgresTimestamp.parse(cell.text)
    }

    /// As ``init(postgresCell:)``, parsed where libpq holds the text (a backtest decodes one per row).
    public init(
        postgresBytes bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        guard timestampTypes.contains(dataType) else { throw .typeMismatch }
        self = try PostgresTimestamp.parse(text: bytes)
    }

    /// Microseconds since 2000-01-01 00:00 UTC, big-endian; the extremes are `±infinity`. The
    /// same `Date` as the text form gives (both count microseconds from the reference date).
    public init(
        postgresBinary bytes: UnsafeBufferPointer<UInt8>, dataType: PostgresDataType
    ) throws(PostgresDecodingFailure) {
        guard timestampTypes.contains(dataType) else { throw .typeMismatch }
        let micros = try PostgresBinary.integer(bytes, dataType: .int8)
        if micros == .max {
            self = .distantFuture
            return
        }
        if micros == .min {
            self = .distantPast
            return
        }
        self = Date(
            timeIntervalSinceReferenceDate: Double(micros - PostgresTimestamp.postgresEpochMicroseconds) / 1_000_000)
    }
}

/// Conversion between `Date` and PostgreSQL's ISO timestamp text, by civil-calendar arithmetic
/// (H. Hinnant, "chrono-compatible low-level date algorithms") rather than a `Calendar`, so the
/// result does not depend on the process locale or time zone.
enum PostgresTimestamp {
    /// Seconds from 1970-01-01 to 2001-01-01, Foundation's reference date.
    private static let referenceOffset: Int64 = 978_307_200
    /// Microseconds from PostgreSQL's epoch (2000-01-01) to Foundation's reference date (366 days).
    static let postgresEpochMicroseconds: Int64 = 366 * 86_400 * 1_000_000
    /// PostgreSQL accepts years up to 294276 AD; anything beyond is sent as `infinity`.
    private static let limitMicroseconds: Double = 9.2e18

    /// Whole microseconds from Foundation's reference date, rounded to the nearest; nil for
    /// `infinity` (later than PostgreSQL's last year, or not finite) and `-infinity`, told
    /// apart by the date's sign. The text and the binary forms both start here.
    private static func microseconds(_ date: Date) -> Int64? {
        let micros = (date.timeIntervalSinceReferenceDate * 1_000_000).rounded()
        guard micros.isFinite, abs(micros) < limitMicroseconds else { return nil }
        return Int64(micros)
    }

    /// `timestamptz`'s binary form of `date`: big-endian microseconds since PostgreSQL's epoch,
    /// `Int64.max`/`Int64.min` for `infinity`/`-infinity` (wherever ``format(_:)`` writes them).
    static func binary(_ date: Date) -> [UInt8] {
        let value =
            microseconds(date).map { $0 + postgresEpochMicroseconds }
            ?? (date.timeIntervalSinceReferenceDate < 0 ? .min : .max)
        return withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    static func format(_ date: Date) -> String {
        guard let micros = microseconds(date) else {
            return date.timeIntervalSinceReferenceDate < 0 ? "-infinity" : "infinity"
        }
        let total = micros + referenceOffset * 1_000_000
        let (seconds, fraction) = floorDivision(total, 1_000_000)
        let (days, secondOfDay) = floorDivision(seconds, 86_400)
        let civil = CivilDate.date(days: Int(days))
        let (year, month, day) = (Int64(civil.year), Int64(civil.month), Int64(civil.day))
        let bc = year <= 0
        // Written digit by digit into one buffer: concatenating padded pieces was most of the
        // cost of binding a timestamp, and a decision binds several.
        return String(unsafeUninitializedCapacity: 40) { out in
            var index = 0
            func put(_ byte: UInt8) {
                out[index] = byte
                index += 1
            }
            func digits(_ value: Int64, _ width: Int) {
                var scratch:
                    (
                        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                        UInt8, UInt8, UInt8,
                        UInt8, UInt8, UInt8, UInt8
                    ) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                withUnsafeMutableBytes(of: &scratch) { reversed in
                    var rest = value
                    var count = 0
                    repeat {
                        reversed[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                        rest /= 10
                        count += 1
                    } while rest > 0
                    for _ in count..<max(count, width) { put(UInt8(ascii: "0")) }
                    while count > 0 {
                        count -= 1
                        put(reversed[count])
                    }
                }
            }
            digits(bc ? 1 - year : year, 4)
            put(UInt8(ascii: "-"))
            digits(month, 2)
            put(UInt8(ascii: "-"))
            digits(day, 2)
            put(UInt8(ascii: " "))
            digits(secondOfDay / 3600, 2)
            put(UInt8(ascii: ":"))
            digits(secondOfDay / 60 % 60, 2)
            put(UInt8(ascii: ":"))
            digits(secondOfDay % 60, 2)
            put(UInt8(ascii: "."))
            digits(fraction, 6)
            for byte in "+00".utf8 { put(byte) }
            if bc { for byte in " BC".utf8 { put(byte) } }
            return index
        }
    }

    /// Parses over the text's UTF-8 bytes in place (a backtest decodes a timestamp per history
    /// row: copying the bytes into arrays first was most of its cost).
    static func parse(_ text: String) throws(PostgresDecodingFailure) -> Date {
        var text = text
        let result = text.withUTF8 { bytes -> Result<Date, PostgresDecodingFailure> in
            do throws(PostgresDecodingFailure) { return .success(try parse(text: bytes)) } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// ``parse(_:)`` over UTF-8 bytes.
    static func parse(text bytes: UnsafeBufferPointer<UInt8>) throws(PostgresDecodingFailure) -> Date {
        if bytes.elementsEqual("infinity".utf8) { return .distantFuture }
        if bytes.elementsEqual("-infinity".utf8) { return .distantPast }
        return try parse(bytes: bytes)
    }

    private static func parse(bytes: UnsafeBufferPointer<UInt8>) throws(PostgresDecodingFailure) -> Date {
        var scanner = DigitScanner(bytes)
        var bc = false
        let count = bytes.count
        if count > 3, bytes[count - 3] == UInt8(ascii: " "), bytes[count - 2] == UInt8(ascii: "B"),
            bytes[count - 1] == UInt8(ascii: "C")
        {
            bc = true
            scanner.end -= 3
        }
        let malformed = PostgresDecodingFailure.malformed(reason: "not an ISO timestamp")
        guard let rawYear = scanner.number(maxDigits: 7), scanner.take("-"),
            let month = scanner.number(exactDigits: 2), scanner.take("-"),
            let day = scanner.number(exactDigits: 2), scanner.take(" ") || scanner.take("T"),
            let hour = scanner.number(exactDigits: 2), scanner.take(":"),
            let minute = scanner.number(exactDigits: 2), scanner.take(":"),
            let second = scanner.number(exactDigits: 2)
        else { throw malformed }
        var micros: Int64 = 0
        if scanner.take(".") {
            var digits = 0
            while let digit = scanner.digit() {
                // Digits past microseconds cannot come from PostgreSQL; ignore rather than fail.
                if digits < 6 { micros = micros * 10 + digit }
                digits += 1
            }
            guard digits > 0 else { throw malformed }
            for _ in digits..<max(digits, 6) { micros *= 10 }
        }
        var offset: Int64 = 0
        if let sign = scanner.peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            scanner.index += 1
            guard let hours = scanner.number(exactDigits: 2) else { throw malformed }
            offset = hours * 3600
            if scanner.take(":") {
                guard let minutes = scanner.number(exactDigits: 2) else { throw malformed }
                offset += minutes * 60
                if scanner.take(":") {
                    guard let seconds = scanner.number(exactDigits: 2) else { throw malformed }
                    offset += seconds
                }
            }
            if sign == UInt8(ascii: "-") { offset = -offset }
        } else {
            _ = scanner.take("Z")
        }
        guard scanner.atEnd, (1...12).contains(month), (1...31).contains(day), hour <= 24, minute <= 59, second <= 60
        else {
            throw malformed
        }
        let year = bc ? 1 - rawYear : rawYear
        let days = Int64(CivilDate.days(year: Int(year), month: Int(month), day: Int(day)))
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset - referenceOffset
        let sinceReference = seconds * 1_000_000 + micros
        return Date(timeIntervalSinceReferenceDate: Double(sinceReference) / 1_000_000)
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
        return (quotient, value - quotient * divisor)
    }
}

/// A cursor over ASCII digits and punctuation with bounded number lengths.
private struct DigitScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    /// Where the scan ends (before a trailing ` BC`).
    var end: Int

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        end = bytes.count
    }

    var atEnd: Bool { index == end }

    func peek() -> UInt8? { index < end ? bytes[index] : nil }

    mutating func take(_ character: Unicode.Scalar) -> Bool {
        guard peek() == UInt8(ascii: character) else { return false }
        index += 1
        return true
    }

    mutating func digit() -> Int64? {
        guard let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        index += 1
        return Int64(byte - UInt8(ascii: "0"))
    }

    mutating func number(exactDigits: Int) -> Int64? {
        let start = index
        guard let value = number(maxDigits: exactDigits), index - start == exactDigits else { return nil }
        return value
    }

    mutating func number(maxDigits: Int) -> Int64? {
        var value: Int64 = 0
        var count = 0
        while count < maxDigits, let digit = digit() {
            value = value * 10 + digit
            count += 1
        }
        return count > 0 ? value : nil
    }
}
