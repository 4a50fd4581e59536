import Foundation
import Testing

@testable import IssuerdPostgres

@Suite struct TimestampTests {
    /// 2024-03-05 12:34:56.789012 UTC, computed independently of the module's calendar code.
    static let reference = Date(timeIntervalSince1970: 1_709_642_096.789012)

    static let dates: [Date] = [
        reference,
        Date(timeIntervalSince1970: 0),
        Date(timeIntervalSince1970: -1_234_567_890.5),  // 1930, before the Unix epoch
        Date(timeIntervalSince1970: 951_782_400),  // 2000-02-29, leap day
        Date(timeIntervalSince1970: 4_102_444_799.999999),  // 2099-12-31 23:59:59.999999
        Date(timeIntervalSinceReferenceDate: 0),
        .distantPast,  // 0001-01-01
        Date(timeIntervalSince1970: -62_167_219_200),  // 1 BC (year 0 in astronomical numbering)
    ]

    @Test func datesRoundTripToTheMicrosecond() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                let back = try roundTrip(Self.dates, as: "timestamptz", on: connection)
                for (sent, received) in zip(Self.dates, back) {
                    #expect(abs(sent.timeIntervalSince(received)) < 0.000_001, "\(sent) came back as \(received)")
                }
            }
        }
    }

    /// Dates are bound in binary; the server must read the very instant their text form names
    /// (the form they were bound in before), at the edges too, in any session time zone.
    @Test func binaryBindingIsTheTextFormsInstant() throws {
        var generator = SystemRandomNumberGenerator()
        var dates =
            Self.dates + [
                Date(timeIntervalSince1970: 1_709_642_096.7890125), Date(timeIntervalSince1970: -0.0000005),
                Date(timeIntervalSinceReferenceDate: 1e300), Date(timeIntervalSinceReferenceDate: -.infinity),
                .distantFuture,
                Date(timeIntervalSince1970: 327_403_382_400), Date(timeIntervalSince1970: -62_167_219_200.5),
            ]
        for _ in 0..<300 {
            let micros = Int64.random(in: -210_866_803_200_000_000...9_000_000_000_000_000_000, using: &generator)
            dates.append(
                Date(
                    timeIntervalSince1970: Double(micros) / 1_000_000
                        + Double.random(in: 0..<0.000_001, using: &generator)))
        }
        try withTestPool { pool in
            try pool.withConnection { connection in
                for zone in ["UTC", "Asia/Kolkata"] {
                    try connection.execute(unsafeSQL: "SET TimeZone = '\(zone)'")
                    for date in dates {
                        let text = PostgresTimestamp.format(date)
                        let row = try #require(
                            try connection.query(
                                "SELECT \(date) = \(text)::timestamptz AS same, \(date)::text AS bound"
                            ).first)
                        let bound = try row.decode("bound", as: String.self)
                        #expect(try row.decode("same", as: Bool.self), "\(text) bound as \(bound)")
                    }
                }
            }
        }
    }

    @Test func serverAgreesWithTheSentInstant() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                let rows = try connection.query(
                    "SELECT \(Self.reference) = '2024-03-05 12:34:56.789012+00'::timestamptz AS same, extract(epoch FROM \(Date(timeIntervalSince1970: 86_400)))::int8 AS epoch"
                )
                #expect(try rows[0].decode("same", as: Bool.self))
                #expect(try rows[0].decode("epoch", as: Int.self) == 86_400)
            }
        }
    }

    /// The session time zone changes the text PostgreSQL sends (offsets with minutes, with
    /// seconds for local mean time before 1909, BC years); the instant must not change.
    @Test(arguments: [
        ("Asia/Kolkata", "2024-03-05 18:04:56.789012+05:30"),
        ("America/St_Johns", "2024-03-05 09:04:56.789012-03:30"),
        ("Pacific/Kiritimati", "2024-03-06 02:34:56.789012+14"),
    ])
    func decodesServerTextInAnySessionTimeZone(zone: String, expectedText: String) throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "SET TimeZone = '\(zone)'")
                let rows = try connection.query(
                    "SELECT '2024-03-05 12:34:56.789012+00'::timestamptz AS t, '2024-03-05 12:34:56.789012+00'::timestamptz::text AS raw"
                )
                #expect(try rows[0].decode("raw", as: String.self) == expectedText)
                let decoded = try rows[0].decode("t", as: Date.self)
                #expect(abs(decoded.timeIntervalSince(Self.reference)) < 0.000_001)
            }
        }
    }

    @Test func decodesSecondsOffsetsBCAndInfinity() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "SET TimeZone = 'Europe/Amsterdam'")
                let rows = try connection.query(
                    """
                    SELECT '1900-06-01 00:00:00+00'::timestamptz AS lmt, '1900-06-01 00:00:00+00'::timestamptz::text AS lmt_raw,
                           '0044-03-15 12:00:00+00 BC'::timestamptz AS ides, extract(epoch FROM '0044-03-15 12:00:00+00 BC'::timestamptz)::int8 AS ides_epoch,
                           'infinity'::timestamptz AS future, '-infinity'::timestamptz AS past, '2024-01-02 03:04:05'::timestamp AS naive
                    """)
                let row = rows[0]
                #expect(try row.decode("lmt_raw", as: String.self) == "1900-06-01 00:19:32+00:19:32")
                #expect(try row.decode("lmt", as: Date.self) == Date(timeIntervalSince1970: -2_195_942_400))
                let epoch = try row.decode("ides_epoch", as: Int.self)
                #expect(try row.decode("ides", as: Date.self) == Date(timeIntervalSince1970: TimeInterval(epoch)))
                #expect(try row.decode("future", as: Date.self) == .distantFuture)
                #expect(try row.decode("past", as: Date.self) == .distantPast)
                #expect(try row.decode("naive", as: Date.self) == Date(timeIntervalSince1970: 1_704_164_645))
            }
        }
    }
}
