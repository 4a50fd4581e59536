import IssuerdPostgres
import Testing

@Suite("Prepared statements per connection")
struct PreparedStatementTests {
    @Test("A repeated statement is prepared once and gives the same answers as unprepared ones")
    func preparedOnce() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { connection in
                for value in 0..<20 {
                    let row = try #require(try connection.query("SELECT \(value)::int + 1 AS next").first)
                    #expect(try row.decode("next", as: Int.self) == value + 1)
                }
                let count = try #require(
                    try connection.query(
                        "SELECT count(*)::int AS n FROM pg_prepared_statements WHERE strpos(statement, 'AS ne' || 'xt') > 0"
                    ).first)
                #expect(try count.decode("n", as: Int.self) == 1)
            }
        }
    }

    @Test("Dynamic SQL beyond the cache limit still runs, and the cache stays bounded")
    func bounded() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { connection in
                for index in 0..<(PostgresConnection.preparedStatementLimit + 40) {
                    let row = try #require(
                        try connection.query("SELECT \(unsafeSQL: String(index)) AS n, \(index) AS m").first)
                    #expect(try row.decode("m", as: Int.self) == index)
                }
                let count = try #require(
                    try connection.query("SELECT count(*)::int AS n FROM pg_prepared_statements").first)
                #expect(try count.decode("n", as: Int.self) <= PostgresConnection.preparedStatementLimit)
            }
        }
    }

    @Test("A table that changes shape under a prepared statement is re-prepared outside transactions")
    func reshaped() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TEMP TABLE shape (v int); INSERT INTO shape VALUES (1)")
                #expect(try connection.query("SELECT v FROM shape").first?.decode("v", as: Int.self) == 1)
                try connection.execute(
                    unsafeSQL: "DROP TABLE shape; CREATE TEMP TABLE shape (v text); INSERT INTO shape VALUES ('x')")
                #expect(try connection.query("SELECT v FROM shape").first?.decode("v", as: String.self) == "x")
                // Results of one prepared statement share their column names: a rename with the
                // same types must still show the new name (the server re-prepares, 0A000).
                #expect(try connection.query("SELECT * FROM shape").first?.decode("v", as: String.self) == "x")
                try connection.execute(unsafeSQL: "ALTER TABLE shape RENAME COLUMN v TO w")
                let renamed = try #require(try connection.query("SELECT * FROM shape").first)
                #expect(renamed.columns == ["w"])
                #expect(try renamed.decode("w", as: String.self) == "x")
                try connection.execute(unsafeSQL: "ALTER TABLE shape ADD COLUMN n int DEFAULT 7")
                let widened = try #require(try connection.query("SELECT * FROM shape").first)
                #expect(widened.columns == ["w", "n"])
                #expect(try widened.decode("n", as: Int.self) == 7)
            }
        }
    }
}
