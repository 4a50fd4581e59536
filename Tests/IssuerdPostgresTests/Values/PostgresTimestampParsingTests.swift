import Foundation
import Testing

@testable import IssuerdPostgres

@Suite struct PostgresTimestampParsingTests {
    @Test(arguments: [
        ("2024-03-05 12:34:56.789012+00", 1_709_642_096.789012),
        ("2024-03-05 18:04:56.789012+05:30", 1_709_642_096.789012),
        ("2024-03-05 09:04:56.5-03:30", 1_709_642_096.5),
        ("1970-01-01 00:00:00+00", 0),
        ("1969-12-31 23:15:30-00:44:30", 0),
        ("2024-03-05T12:34:56Z", 1_709_642_096),
        ("2000-02-29 00:00:00+00", 951_782_400),
        ("0001-01-01 00:00:00+00", -62_135_596_800),
        ("0001-01-01 00:00:00+00 BC", -62_167_219_200),
    ])
    func parsesISOText(text: String, epoch: Double) throws {
        let date = try PostgresTimestamp.parse(text)
        #expect(abs(date.timeIntervalSince1970 - epoch) < 0.000_001)
        // A row's cells are parsed from their bytes, to the same instant.
        let fromBytes = try Array(text.utf8).withUnsafeBufferPointer { bytes throws(PostgresDecodingFailure) in
            try Date(postgresBytes: bytes, dataType: .timestamptz)
        }
        #expect(fromBytes == date)
    }

    @Test func bytesDecodeInfinityAndRefuseOtherTypes() throws {
        func decode(_ text: String, _ type: PostgresDataType) throws(PostgresDecodingFailure) -> Date {
            try Array(text.utf8).withUnsafeBufferPointer { bytes throws(PostgresDecodingFailure) in
                try Date(postgresBytes: bytes, dataType: type)
            }
        }
        #expect(try decode("infinity", .timestamptz) == .distantFuture)
        #expect(try decode("-infinity", .timestamp) == .distantPast)
        #expect(throws: PostgresDecodingFailure.typeMismatch) { try decode("2024-03-05 12:34:56+00", .text) }
        #expect(throws: PostgresDecodingFailure.self) { try decode("infinityx", .timestamptz) }
    }

    @Test(arguments: [
        "", "2024-3-5 12:00:00+00", "2024-13-01 00:00:00+00", "2024-01-01 00:00:00+0", "2024-01-01 00:00:00.+00",
        "2024-01-01 00:00:00+00 junk", "99999999-01-01 00:00:00+00", "2024-01-01",
    ])
    func rejectsMalformedText(text: String) {
        #expect(throws: PostgresDecodingFailure.self) { try PostgresTimestamp.parse(text) }
    }

    @Test func formatsUTCWithMicroseconds() {
        #expect(
            PostgresTimestamp.format(Date(timeIntervalSince1970: 1_709_642_096.789012))
                == "2024-03-05 12:34:56.789012+00")
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: -0.5)) == "1969-12-31 23:59:59.500000+00")
        #expect(
            PostgresTimestamp.format(Date(timeIntervalSince1970: -62_167_219_200)) == "0001-01-01 00:00:00.000000+00 BC"
        )
        #expect(PostgresTimestamp.format(Date(timeIntervalSinceReferenceDate: 1e300)) == "infinity")
        #expect(PostgresTimestamp.format(Date(timeIntervalSinceReferenceDate: -.infinity)) == "-infinity")
        #expect(
            PostgresTimestamp.format(Date(timeIntervalSince1970: 327_403_382_400)) == "12345-01-01 00:00:00.000000+00")
        #expect(
            PostgresTimestamp.format(Date(timeIntervalSince1970: -62_167_219_200.5))
                == "0002-12-31 23:59:59.500000+00 BC")
    }

    @Test func formattedTextParsesBackToTheSameMicrosecond() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            // From 4713 BC (PostgreSQL's first day) to about 287,000 AD, in whole microseconds.
            let micros = Int64.random(in: -210_866_803_200_000_000...9_000_000_000_000_000_000, using: &generator)
            let date = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
            let text = PostgresTimestamp.format(date)
            let parsed = try PostgresTimestamp.parse(text)
            #expect(
                abs(parsed.timeIntervalSince1970 - date.timeIntervalSince1970) <= 1e-6
                    * max(1, abs(date.timeIntervalSince1970) / 1e9), "\(text)")
        }
    }
}
