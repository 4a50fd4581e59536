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

    @Test(
        "A migration reshaping a table under a live pool: the next pipeline, pipelined transaction and transaction prepare again and succeed"
    )
    func reshapedUnderLivePool() throws {
        try withTestPool(size: 2) { pool in
            try pool.withConnection { setup in
                try setup.execute(
                    unsafeSQL: "CREATE TABLE reshaped (id int PRIMARY KEY, v int); INSERT INTO reshaped VALUES (1, 10)")
            }
            let read: PostgresQuery = "SELECT * FROM reshaped WHERE id = \(Int32(1))"
            /// What `issuerd migrate` does from its own session while the pool's connection keeps
            /// its prepared statements.
            func migrate(_ sql: String) throws {
                try pool.withConnection { other in try other.execute(unsafeSQL: sql) }
            }
            try pool.withConnection { connection in
                // Each form prepares the statement on this connection first.
                _ = try connection.pipeline([read])
                _ = try connection.pipelinedTransaction(opening: [read]) { _, _ in ((), []) }
                _ = try connection.pipelinedTransaction(isolation: .repeatableRead, opening: [read]) { _, _ in ((), [])
                }

                try migrate("ALTER TABLE reshaped ADD COLUMN w text DEFAULT 'added'")
                var piped = PostgresPipeline()
                let reread = piped.append(read)
                #expect(try connection.pipeline(piped)[reread].first?.columns == ["id", "v", "w"])

                try migrate("ALTER TABLE reshaped ALTER COLUMN v TYPE bigint")
                var opening = PostgresPipeline()
                let row = opening.append(read)
                let value = try connection.pipelinedTransaction(opening: opening) { _, results in
                    (
                        try results[row].first?.decode("v", as: Int.self),
                        [
                            "UPDATE reshaped SET v = v + 1 WHERE id = \(Int32(1))" as PostgresQuery
                        ]
                    )
                }
                #expect(value == 10)

                try migrate("ALTER TABLE reshaped ADD COLUMN x int DEFAULT 3")
                let repeatable = try connection.pipelinedTransaction(isolation: .repeatableRead, opening: opening) {
                    _, results in (try results[row].first?.decode("x", as: Int.self), [])
                }
                #expect(repeatable == 3)
            }
            // The pool lends the same connection again (most recently used first).
            try migrate("ALTER TABLE reshaped DROP COLUMN w")
            let columns = try pool.transaction { try $0.query(read).first?.columns }
            #expect(columns == ["id", "v", "x"])
            try migrate("ALTER TABLE reshaped ADD COLUMN y int")
            let committed = try pool.transaction { try $0.query(read).first?.decode("v", as: Int.self) }
            #expect(committed == 11)
        }
    }
}
