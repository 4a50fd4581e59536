import IssuerdPostgres
import Testing

@Suite struct PostgresQueryTests {
    @Test func interpolatedValuesBecomeNumberedParameters() {
        let id = 42
        let name = "Ada"
        let query: PostgresQuery = "SELECT * FROM cards WHERE id = \(id) AND holder = \(name) AND n > \(Int32(3))"
        #expect(query.sql == "SELECT * FROM cards WHERE id = $1 AND holder = $2 AND n > $3")
        #expect(query.bindings.count == 3)
        #expect(query.bindings[0].dataType == .int8)
        #expect(query.bindings[1].value == .text("Ada"))
        #expect(query.bindings[2].dataType == .int4)
    }

    @Test func unsafeSQLIsSplicedVerbatimWithoutBinding() {
        let query: PostgresQuery = "SELECT id FROM cards \(unsafeSQL: "ORDER BY id DESC") LIMIT \(10)"
        #expect(query.sql == "SELECT id FROM cards ORDER BY id DESC LIMIT $1")
        #expect(query.bindings.count == 1)
        #expect(PostgresQuery(unsafeSQL: "SELECT 1").bindings.isEmpty)
    }

    @Test func descriptionMasksEveryBoundValue() {
        let pan = "4111111111111111"
        let query: PostgresQuery = "INSERT INTO cards (pan, cvv) VALUES (\(pan), \(Optional("123")))"
        #expect(!query.description.contains(pan))
        #expect(!query.description.contains("123"))
        #expect(query.description.contains("****"))
        #expect(query.description.hasPrefix("INSERT INTO cards (pan, cvv) VALUES ($1, $2)"))
    }

    @Test func injectionAttemptIsStoredAsPlainData() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute("CREATE TABLE victims (name text NOT NULL)")
                let hostile = "x'); DROP TABLE victims; --"
                let inserted = try connection.execute("INSERT INTO victims (name) VALUES (\(hostile))")
                #expect(inserted == 1)
                let rows = try connection.query("SELECT name FROM victims WHERE name = \(hostile)")
                #expect(rows.count == 1)
                #expect(try rows.first?.decode("name", as: String.self) == hostile)
            }
        }
    }

    @Test func textParameterWithNulByteIsRefusedNotTruncated() throws {
        try withTestPool { pool in
            let error = postgresError {
                try pool.withConnection { _ = try $0.query("SELECT \("abc\u{0}def") AS v") }
            }
            #expect(error?.code == .invalidParameter)
            #expect(error?.message.contains("$1") == true)
        }
    }

    @Test func multiStatementScriptRunsEveryStatement() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(
                    unsafeSQL: "CREATE TABLE a (x int); INSERT INTO a VALUES (1), (2); INSERT INTO a VALUES (3)")
                let rows = try connection.query("SELECT sum(x)::int8 AS total FROM a")
                #expect(try rows[0].decode("total", as: Int.self) == 6)
                #expect(rows.affectedRows == 1)
            }
        }
    }
}
