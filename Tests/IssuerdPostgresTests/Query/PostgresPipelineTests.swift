import Foundation
import IssuerdPostgres
import Testing

/// A pipeline's results are read through the handles its statements gave out, each decoded by
/// its own statement; columns are found by name.
@Suite struct PostgresPipelineTests {
    /// A statement naming its result: the ledger's entries above a bound, or nil when none is.
    struct Above: PostgresStatement {
        var bound: Int32
        var query: PostgresQuery { "SELECT n FROM ledger WHERE n > \(bound) ORDER BY n" }
        func result(from rows: PostgresRows) throws -> [Int32]? {
            let values = try rows.map { try $0.decode("n", as: Int32.self) }
            return values.isEmpty ? nil : values
        }
    }

    /// A statement whose decoding fails.
    struct Misread: PostgresStatement {
        var query: PostgresQuery { "SELECT 1 AS one" }
        func result(from rows: PostgresRows) throws -> Int { try rows.first?.decode("two", as: Int.self) ?? 0 }
    }

    @Test func eachHandleReadsItsOwnStatementDecoded() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE ledger (n int)")
                // Statements nobody reads take no handle and shift none.
                var pipeline: PostgresPipeline = [
                    "INSERT INTO ledger VALUES (\(Int32(1))), (\(Int32(2))), (\(Int32(3)))"
                ]
                let aboveOne = pipeline.append(Above(bound: 1))
                pipeline.append(contentsOf: ["SELECT pg_advisory_xact_lock(\(Int64(7)))", "SELECT 0 AS zero"])
                let aboveThree = pipeline.append(Above(bound: 3))
                let raw = pipeline.append("SELECT \(Int32(9)) AS nine" as PostgresQuery)
                #expect(pipeline.queries.count == 6)
                let results = try connection.pipeline(pipeline)
                #expect(try results[aboveOne] == [2, 3])
                #expect(try results[aboveThree] == nil)
                #expect(try results[raw].first?.decode("nine", as: Int32.self) == 9)
            }
        }
    }

    /// Above READ COMMITTED a `BEGIN` travels first; the handles still count from `opening`'s own
    /// first statement.
    @Test func handlesSurviveTheExplicitTransactionsBegin() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE ledger (n int)")
                try connection.execute(unsafeSQL: "INSERT INTO ledger VALUES (5), (6)")
                for isolation in [IsolationLevel.readCommitted, .repeatableRead, .serializable] {
                    var opening: PostgresPipeline = ["SELECT 0 AS zero"]
                    let above = opening.append(Above(bound: 5))
                    let seen = try connection.pipelinedTransaction(isolation: isolation, opening: opening) {
                        _, results in (value: try results[above], closing: [])
                    }
                    #expect(seen == [6], "\(isolation)")
                }
            }
        }
    }

    @Test func aStatementsDecodingErrorIsThrownWhereItIsRead() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                var pipeline = PostgresPipeline()
                let misread = pipeline.append(Misread())
                let results = try connection.pipeline(pipeline)
                let error = postgresError { _ = try results[misread] }
                #expect(error?.code == .decoding)
                #expect(error?.message.contains("no column named \"two\"") == true)
            }
        }
    }

    @Test func columnsAreFoundByName() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                let row = try connection.query("SELECT NULL::text AS absent, 'x' AS present")[0]
                #expect(try row.index(of: "present") == 1)
                #expect(try row.isNull("absent"))
                #expect(try !row.isNull("present"))
                // A misspelt column is an error, not a NULL.
                #expect(postgresError { _ = try row.isNull("presnt") }?.code == .decoding)
            }
        }
    }
}
