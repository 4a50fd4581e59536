import Foundation
import IssuerdPostgres
import Testing

@Suite struct TextAndBytesRoundTripTests {
    static let strings = [
        "", "plain", "한국어 텍스트 (Hangul)", "emoji 🃏💳", "quote ' double \" backslash \\",
        "new\nline\ttab", "{braces,commas}", "NULL", String(repeating: "가", count: 10_000),
    ]

    @Test func textKeepsEveryCharacter() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                #expect(try roundTrip(Self.strings, as: "text", on: connection) == Self.strings)
                #expect(try roundTrip(Self.strings, as: "varchar(20000)", on: connection) == Self.strings)
                // The server counts characters, not bytes: the Hangul really arrived as UTF-8.
                let length = try connection.query("SELECT length(\("한국어")) AS n")[0].decode("n", as: Int.self)
                #expect(length == 3)
            }
        }
    }

    @Test func byteaKeepsZeroBytesAndHighBytes() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                let blobs: [[UInt8]] = [
                    [], [0], [0, 0, 1, 0, 255, 0], Array(0...255), [UInt8](repeating: 0, count: 70_000),
                ]
                #expect(try roundTrip(blobs, as: "bytea", on: connection) == blobs)
                let datas = blobs.map { Data($0) }
                #expect(try roundTrip(datas, as: "bytea", on: connection) == datas)
                let server = try connection.query(
                    "SELECT length(\([UInt8]([0, 0, 7, 0]))) AS n, \(Data([0xde, 0xad])) = '\\xdead'::bytea AS same")
                #expect(try server[0].decode("n", as: Int.self) == 4)
                #expect(try server[0].decode("same", as: Bool.self))
            }
        }
    }

    @Test func textArraysQuoteEveryElement() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                let arrays: [[String]] = [[], ["a"], Self.strings, ["", "", "x"], ["NULL", "null", " spaced "]]
                #expect(try roundTrip(arrays, as: "text[]", on: connection) == arrays)
                let count = try connection.query("SELECT cardinality(\(["a,b", "c"])) AS n")[0].decode(
                    "n", as: Int.self)
                #expect(count == 2)
                // Server-written literals: unquoted, quoted, a non-default lower bound.
                let rows = try connection.query(
                    "SELECT ARRAY['x', 'y z', 'a\"b']::text[] AS plain, '[0:1]={p,q}'::text[] AS shifted, ARRAY['a', NULL]::text[] AS holed"
                )
                #expect(try rows[0].decode("plain", as: [String].self) == ["x", "y z", "a\"b"])
                #expect(try rows[0].decode("shifted", as: [String].self) == ["p", "q"])
                #expect(postgresError { _ = try rows[0].decode("holed", as: [String].self) }?.code == .decoding)
            }
        }
    }

    @Test func jsonbFromEncodableAndFromRawText() throws {
        struct Device: Codable, Equatable {
            var name: String
            var score: Int
            var tags: [String]
        }
        try withTestPool { pool in
            try pool.withConnection { connection in
                let device = Device(name: "iPhone 한국", score: 7, tags: ["a/b", "\"q\""])
                let values = [
                    try PostgresJSON(encoding: device), PostgresJSON(rawJSON: #"{"b": [1, 2, {"c": null}], "a": "é"}"#),
                ]
                let back = try roundTrip(values, as: "jsonb", on: connection)
                #expect(try back[0].decode(Device.self) == device)
                let server = try connection.query(
                    "SELECT \(values[1]) -> 'b' -> 2 ->> 'c' IS NULL AS is_null, \(values[0]) ->> 'score' AS score")
                #expect(try server[0].decode("is_null", as: Bool.self))
                #expect(try server[0].decode("score", as: String.self) == "7")
                let invalid = postgresError {
                    _ = try connection.query("SELECT \(PostgresJSON(rawJSON: "{nope")) AS j")
                }
                #expect(invalid?.sqlState == "22P02")
                #expect(invalid?.message.contains("nope") == false)
            }
        }
    }

    /// `json` keeps the text as sent: no `jsonb` parse on the way in, no re-rendering on the way
    /// out (key order, spacing and duplicate keys as written).
    @Test func jsonKeepsTheTextAsWritten() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                let text = #"{"b":[1,2.50,{"c":null}],"a":"é\u00e9","a":1}"#
                let value = PostgresTextJSON(rawJSON: text)
                let rows = try connection.query(
                    "SELECT \(value) AS j, pg_typeof(\(value))::text AS type, \(value) -> 'b' ->> 1 AS second")
                #expect(try rows[0].decode("j", as: PostgresTextJSON.self).rawJSON == text)
                #expect(try rows[0].decode("type", as: String.self) == "json")
                #expect(try rows[0].decode("second", as: String.self) == "2.50")
                // A jsonb column's text is PostgreSQL's rendering, not what was sent.
                let jsonb = try connection.query("SELECT \(PostgresJSON(rawJSON: text)) AS j")
                #expect(try jsonb[0].decode("j", as: PostgresTextJSON.self).rawJSON != text)
                let invalid = postgresError {
                    _ = try connection.query("SELECT \(PostgresTextJSON(rawJSON: "{nope")) AS j")
                }
                #expect(invalid?.sqlState == "22P02")
                #expect(invalid?.message.contains("nope") == false)
                #expect(String(describing: value) == "PostgresTextJSON(****)")
            }
        }
    }
}

/// ``PostgresRow/withBytes(_:_:)``: a cell's text bytes where libpq holds them, for parsing in
/// place (the backtest's JSON documents), and the same text `decode` gives.
@Suite struct RowBytesTests {
    @Test func bytesAreTheCellsTextAndNilForNull() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                let document = #"{"device.locale": "한국어", "emoji": "🃏"}"#
                let row = try connection.query(
                    "SELECT \(document)::json AS j, NULL::text AS n, ''::text AS e, \(TextAndBytesRoundTripTests.strings.last!)::text AS long"
                )[0]
                #expect(try row.withBytes(0) { $0.map { Array($0) } } == Array(document.utf8))
                #expect(
                    try row.withBytes(0) { $0.map { String(decoding: $0, as: UTF8.self) } }
                        == (try row.decode(0, as: String.self)))
                #expect(try row.withBytes(1) { $0 == nil })
                #expect(try row.withBytes(2) { $0?.count } == 0)
                #expect(try row.withBytes(3) { $0?.count } == TextAndBytesRoundTripTests.strings.last!.utf8.count)
                // What the body throws comes out as it is.
                struct Stop: Error {}
                #expect(throws: Stop.self) { try row.withBytes(0) { _ in throw Stop() } }
            }
        }
    }

    @Test func aMissingColumnIsADecodingError() throws {
        try withTestPool { pool in
            let error = postgresError {
                try pool.withConnection { connection in
                    _ = try connection.query("SELECT 1 AS one")[0].withBytes(3) { $0?.count }
                }
            }
            #expect(error?.code == .decoding)
            #expect(error?.message.contains("no column at index 3 (1 columns)") == true)
        }
    }
}
