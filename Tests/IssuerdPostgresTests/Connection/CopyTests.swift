import Foundation
import IssuerdPostgres
import Testing

@Suite struct CopyTests {
    struct Abort: Error {}

    @Test func textFormatRoundTripsEscapesNullsAndBytes() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE staged (n int, label text, data bytea, flag boolean, at timestamptz)")
                let at = Date(timeIntervalSince1970: 1_700_000_000.25)
                let labels: [String?] = ["tab\there", "line\nbreak\r", #"back\slash \N"#, nil, "한국어"]
                let copied = try connection.copyIn(unsafeSQL: "COPY staged (n, label, data, flag, at) FROM STDIN") { writer in
                    for (index, label) in labels.enumerated() {
                        var row = PostgresCopyText()
                        row.integer(index)
                        row.text(label)
                        row.bytea([0x00, 0x5C, 0xFF, UInt8(index)])
                        row.boolean(index % 2 == 0)
                        row.timestamp(index == 0 ? at : nil)
                        row.endRow()
                        // Rows may be split across writes anywhere.
                        try writer.write(Array(row.bytes.prefix(3)))
                        try writer.write(Array(row.bytes.dropFirst(3)))
                    }
                }
                #expect(copied == labels.count)
                let rows = try connection.query("SELECT n, label, data, flag, at FROM staged ORDER BY n")
                #expect(try rows.map { try $0.decode("label", as: String?.self) } == labels)
                #expect(try rows.map { try $0.decode("data", as: [UInt8].self) } == labels.indices.map { [0x00, 0x5C, 0xFF, UInt8($0)] })
                #expect(try rows.map { try $0.decode("flag", as: Bool.self) } == [true, false, true, false, true])
                #expect(try rows[0].decode("at", as: Date.self) == at)
                #expect(try rows[1].decode("at", as: Date?.self) == nil)
            }
        }
    }

    @Test func aThrowingBodyAbandonsTheCopyAndLeavesTheConnectionUsable() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE staged (n int)")
                #expect(throws: Abort.self) {
                    try connection.transaction { connection in
                        try connection.copyIn(unsafeSQL: "COPY staged FROM STDIN") { writer in
                            try writer.write(Array("1\n2\n".utf8))
                            throw Abort()
                        }
                    }
                }
                #expect(try connection.query("SELECT count(*) AS n FROM staged")[0].decode("n", as: Int.self) == 0)
            }
        }
    }

    @Test func aRowTheServerRejectsFailsTheCopy() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE staged (n int PRIMARY KEY)")
                let error = postgresError {
                    try connection.copyIn(unsafeSQL: "COPY staged FROM STDIN") { try $0.write(Array("1\n1\n".utf8)) }
                }
                #expect(error?.code == .uniqueViolation)
                let malformed = postgresError {
                    try connection.copyIn(unsafeSQL: "COPY staged FROM STDIN") { try $0.write(Array("not a number\n".utf8)) }
                }
                #expect(malformed != nil)
                #expect(try connection.query("SELECT count(*) AS n FROM staged")[0].decode("n", as: Int.self) == 0)
                // Not a COPY FROM STDIN: refused without leaving the connection in copy mode.
                #expect(postgresError { try connection.copyIn(unsafeSQL: "SELECT 1") { _ in } } != nil)
                #expect(try connection.query("SELECT 2 AS two")[0].decode("two", as: Int.self) == 2)
            }
        }
    }
}
