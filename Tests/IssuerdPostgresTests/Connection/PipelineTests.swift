import Foundation
import IssuerdPostgres
import Testing

@Suite struct PipelineTests {
    struct Abort: Error {}

    @Test func statementsReturnTheirOwnRowsInOrder() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE ledger (n int)")
                let rows = try connection.pipeline([
                    "INSERT INTO ledger VALUES (\(Int32(1))), (\(Int32(2)))",
                    "SELECT n FROM ledger ORDER BY n",
                    "SELECT \(Int32(7)) + 1 AS eight",
                ])
                #expect(rows.count == 3)
                #expect(rows[0].affectedRows == 2)
                #expect(try rows[1].map { try $0.decode("n", as: Int32.self) } == [1, 2])
                #expect(try rows[2][0].decode("eight", as: Int32.self) == 8)
                // The connection is back in normal mode: a plain statement runs.
                #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self) == 2)
            }
        }
    }

    @Test func firstErrorIsThrownAndTheRestSkipped() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE ledger (n int PRIMARY KEY)")
                let error = postgresError {
                    try connection.pipeline([
                        "INSERT INTO ledger VALUES (\(Int32(1)))",
                        "INSERT INTO ledger VALUES (\(Int32(1)))",
                        "INSERT INTO ledger VALUES (\(Int32(3)))",
                    ])
                }
                #expect(error?.code == .uniqueViolation)
                // Outside a transaction block a pipeline runs as one implicit transaction: the
                // first insert is rolled back with the failure, the third never ran.
                #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self) == 0)
                // The same statements run again (their prepared forms survived the failure).
                try connection.pipeline(["INSERT INTO ledger VALUES (\(Int32(1)))", "INSERT INTO ledger VALUES (\(Int32(3)))"])
                #expect(try connection.query("SELECT n FROM ledger ORDER BY n").map { try $0.decode("n", as: Int32.self) } == [1, 3])
            }
        }
    }

    @Test func pipelinedTransactionCommitsBothHalves() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE ledger (n int)")
                let seen = try connection.pipelinedTransaction(opening: ["SELECT count(*) AS n FROM ledger"]) { _, rows in
                    (value: try rows[0][0].decode("n", as: Int.self), closing: ["INSERT INTO ledger VALUES (\(Int32(5)))"])
                }
                #expect(seen == 0)
                #expect(try connection.query("SELECT n FROM ledger").map { try $0.decode("n", as: Int32.self) } == [5])
            }
        }
    }

    @Test func pipelinedTransactionRollsBackOnABodyErrorOrAFailedClosingStatement() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { try $0.execute(unsafeSQL: "CREATE TABLE ledger (n int PRIMARY KEY)") }
            #expect(throws: Abort.self) {
                try pool.withConnection { connection in
                    try connection.pipelinedTransaction(opening: ["INSERT INTO ledger VALUES (\(Int32(1)))"]) { _, _ -> (value: Void, closing: [PostgresQuery]) in
                        throw Abort()
                    }
                }
            }
            let error = postgresError {
                try pool.withConnection { connection in
                    try connection.pipelinedTransaction(opening: ["INSERT INTO ledger VALUES (\(Int32(2)))"]) { _, _ in
                        (value: (), closing: ["INSERT INTO ledger VALUES (\(Int32(2)))"])
                    }
                }
            }
            #expect(error?.code == .uniqueViolation)
            try pool.withConnection { connection throws in
                #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self) == 0)
            }
            #expect(pool.statistics.idle == 1)
        }
    }

    /// Each statement in a pipeline takes its own snapshot: a count after a lock wait sees the
    /// row the lock holder committed (what the provisioning rate limits rely on).
    @Test func statementAfterALockWaitSeesWhatCommittedMeanwhile() throws {
        try withTestPool(size: 2) { pool in
            try pool.withConnection { try $0.execute(unsafeSQL: "CREATE TABLE ledger (n int)") }
            let counted = try pool.withConnection { holder in
                try holder.execute(unsafeSQL: "BEGIN; SELECT pg_advisory_xact_lock(42); INSERT INTO ledger VALUES (1)")
                // The holder commits from another thread while this one waits for the lock.
                nonisolated(unsafe) let committer = holder
                let committed = DispatchSemaphore(value: 0)
                Thread {
                    Thread.sleep(forTimeInterval: 0.3)
                    _ = try? committer.execute(unsafeSQL: "COMMIT")
                    committed.signal()
                }.start()
                defer { committed.wait() }
                return try pool.withConnection { connection in
                    try connection.pipelinedTransaction(
                        opening: ["SELECT pg_advisory_xact_lock(\(Int64(42)))", "SELECT count(*) AS n FROM ledger"]
                    ) { _, rows in
                        (value: try rows[1][0].decode("n", as: Int.self), closing: [])
                    }
                }
            }
            #expect(counted == 1)
        }
    }
}
