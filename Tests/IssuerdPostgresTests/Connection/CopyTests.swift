import Foundation
import IssuerdPostgres
import Testing

@Suite struct CopyTests {
    struct Abort: Error {}

    @Test func textFormatRoundTripsEscapesNullsAndBytes() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(
                    unsafeSQL: "CREATE TABLE staged (n int, label text, data bytea, flag boolean, at timestamptz)")
                let at = Date(timeIntervalSince1970: 1_700_000_000.25)
                let labels: [String?] = ["tab\there", "line\nbreak\r", #"back\slash \N"#, nil, "한국어"]
                let copied = try connection.copyIn(unsafeSQL: "COPY staged (n, label, data, flag, at) FROM STDIN") {
                    writer in
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
                #expect(
                    try rows.map { try $0.decode("data", as: [UInt8].self) }
                        == labels.indices.map { [0x00, 0x5C, 0xFF, UInt8($0)] })
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
                    try connection.copyIn(unsafeSQL: "COPY staged FROM STDIN") {
                        try $0.write(Array("not a number\n".utf8))
                    }
                }
                #expect(malformed != nil)
                #expect(try connection.query("SELECT count(*) AS n FROM staged")[0].decode("n", as: Int.self) == 0)
                // Not a COPY FROM STDIN: refused without leaving the connection in copy mode.
                #expect(postgresError { try connection.copyIn(unsafeSQL: "SELECT 1") { _ in } } != nil)
                #expect(try connection.query("SELECT 2 AS two")[0].decode("two", as: Int.self) == 2)
            }
        }
    }

    @Test func aRefusedRowIsNamedByItsLineInTheCopysData() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                // Digits in the table's name must not be taken for the line.
                try connection.execute(
                    unsafeSQL: "CREATE TABLE staged2025 (n int PRIMARY KEY, label text CHECK (label <> 'bad'))")
                // Past COPY's batches of 1,000 rows, whose index entries are made when a batch is
                // flushed: the line is still the refused row's own.
                let rows = (1...2_500).map { "\($0)\tok\n" }.joined() + "17\tok\n"
                let duplicate = postgresError {
                    _ = try connection.transaction {
                        try $0.copyIn(unsafeSQL: "COPY staged2025 FROM STDIN") { try $0.write(Array(rows.utf8)) }
                    }
                }
                #expect(duplicate?.code == .uniqueViolation)
                #expect(duplicate?.constraint == "staged2025_pkey")
                #expect(duplicate?.copyLine == 2_501)
                // A row refused before it is batched (a CHECK): the context quotes the row, the line is read all the same.
                let check = postgresError {
                    _ = try connection.transaction {
                        try $0.copyIn(unsafeSQL: "COPY staged2025 FROM STDIN") {
                            try $0.write(Array("1\tok\n2\tok\n3\tbad\n".utf8))
                        }
                    }
                }
                #expect(check?.code == .checkViolation)
                #expect(check?.copyLine == 3)
                // Not a COPY: no line.
                let other = postgresError {
                    try connection.execute(unsafeSQL: "INSERT INTO staged2025 VALUES (1, 'bad')")
                }
                #expect(other?.code == .checkViolation)
                #expect(other?.copyLine == nil)
            }
        }
    }

    @Test(
        "The COPY line is read from translated contexts and nested ones",
        arguments: [
            ("COPY cards, line 12", 12),
            ("COPY cards, Zeile 7: \"x\t1\"", 7),
            ("COPY cards, 行 3, 列 country: \"42\"", 3),
            ("SQL statement \"SELECT 1\"\nCOPY t9, line 40", 40),
        ])
    func copyLineParsing(context: String, line: Int) {
        #expect(PostgresError(code: .uniqueViolation, message: "m", context: context).copyLine == line)
    }

    @Test func noCopyLineWithoutACopyContext() {
        #expect(
            PostgresError(code: .other, message: "m", context: "PL/pgSQL function f() line 3 at RAISE").copyLine == nil)
        #expect(PostgresError(code: .other, message: "m").copyLine == nil)
    }
}
