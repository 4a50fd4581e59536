import Foundation
import IssuerdCore
import IssuerdPostgres
import Testing

@Suite struct PipelineTests {
    struct Abort: Error {}

    /// A typed statement: the table's row count.
    struct Count: PostgresStatement {
        var table: String
        var query: PostgresQuery { PostgresQuery(unsafeSQL: "SELECT count(*) AS n FROM " + table) }
        func result(from rows: PostgresRows) throws -> Int { try rows.first?.decode("n", as: Int.self) ?? 0 }
    }

    @Test func statementsReturnTheirOwnRowsInOrder() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE ledger (n int)")
                var pipeline = PostgresPipeline()
                let inserted = pipeline.append(
                    "INSERT INTO ledger VALUES (\(Int32(1))), (\(Int32(2)))" as PostgresQuery)
                let selected = pipeline.append("SELECT n FROM ledger ORDER BY n" as PostgresQuery)
                let eight = pipeline.append("SELECT \(Int32(7)) + 1 AS eight" as PostgresQuery)
                let results = try connection.pipeline(pipeline)
                #expect(results.count == 3)
                #expect(results[inserted].affectedRows == 2)
                #expect(try results[selected].map { try $0.decode("n", as: Int32.self) } == [1, 2])
                #expect(try results[eight].first?.decode("eight", as: Int32.self) == 8)
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
                try connection.pipeline([
                    "INSERT INTO ledger VALUES (\(Int32(1)))", "INSERT INTO ledger VALUES (\(Int32(3)))",
                ])
                #expect(
                    try connection.query("SELECT n FROM ledger ORDER BY n").map { try $0.decode("n", as: Int32.self) }
                        == [1, 3])
            }
        }
    }

    @Test func pipelinedTransactionCommitsBothHalves() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE ledger (n int)")
                var opening = PostgresPipeline()
                let counted = opening.append(Count(table: "ledger"))
                let seen = try connection.pipelinedTransaction(opening: opening) { _, results in
                    (
                        value: try results[counted],
                        closing: ["INSERT INTO ledger VALUES (\(Int32(5)))"]
                    )
                }
                #expect(seen == 0)
                #expect(try connection.query("SELECT n FROM ledger").map { try $0.decode("n", as: Int32.self) } == [5])
                // Above READ COMMITTED, BEGIN and COMMIT travel with the halves.
                var showing = PostgresPipeline()
                let shown = showing.append("SHOW transaction_isolation" as PostgresQuery)
                let level = try connection.pipelinedTransaction(isolation: .repeatableRead, opening: showing) {
                    _, results in
                    (
                        value: try results[shown].first?.decode("transaction_isolation", as: String.self),
                        closing: ["INSERT INTO ledger VALUES (\(Int32(6)))"]
                    )
                }
                #expect(level == "repeatable read")
                #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self) == 2)
            }
        }
    }

    @Test func pipelinedTransactionRollsBackOnABodyErrorOrAFailedClosingStatement() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { try $0.execute(unsafeSQL: "CREATE TABLE ledger (n int PRIMARY KEY)") }
            #expect(throws: Abort.self) {
                try pool.withConnection { connection in
                    try connection.pipelinedTransaction(opening: ["INSERT INTO ledger VALUES (\(Int32(1)))"]) {
                        _, _ -> (value: Void, closing: [PostgresQuery]) in
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
                    var opening: PostgresPipeline = ["SELECT pg_advisory_xact_lock(\(Int64(42)))"]
                    let countRead = opening.append(Count(table: "ledger"))
                    return try connection.pipelinedTransaction(opening: opening) { _, results in
                        (value: try results[countRead], closing: [])
                    }
                }
            }
            #expect(counted == 1)
        }
    }

    /// At READ COMMITTED the transaction is the pipeline's implicit one: both halves and any
    /// statement `body` runs are one transaction (one transaction id, the advisory lock held
    /// throughout), committed at the sync point, and nothing of it is visible before.
    @Test func implicitTransactionSpansBothHalvesAndTheBodysStatements() throws {
        try withTestPool(size: 2) { pool in
            try pool.withConnection { try $0.execute(unsafeSQL: "CREATE TABLE ledger (n int, xid bigint)") }
            try pool.withConnection { connection in
                let seenInside = try connection.pipelinedTransaction(
                    opening: [
                        "SELECT pg_advisory_xact_lock(\(Int64(43)))",
                        "INSERT INTO ledger VALUES (\(Int32(1)), txid_current())",
                    ]
                ) { connection, _ in
                    let inside = try connection.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self)
                    // Another session sees nothing yet, and cannot take the lock.
                    let outside = try pool.withConnection { other in
                        (
                            rows: try other.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self),
                            locked: try other.query("SELECT pg_try_advisory_lock(\(Int64(43))) AS got")[0].decode(
                                "got", as: Bool.self)
                        )
                    }
                    #expect(outside.rows == 0)
                    #expect(outside.locked == false)
                    return (value: inside, closing: ["INSERT INTO ledger VALUES (\(Int32(2)), txid_current())"])
                }
                #expect(seenInside == 1)
                let rows = try connection.query("SELECT n, xid FROM ledger ORDER BY n").map {
                    (try $0.decode("n", as: Int32.self), try $0.decode("xid", as: Int64.self))
                }
                #expect(rows.map(\.0) == [1, 2])
                #expect(Set(rows.map(\.1)).count == 1)
                // The lock ended with the transaction.
                #expect(
                    try connection.query("SELECT pg_try_advisory_xact_lock(\(Int64(43))) AS got")[0].decode(
                        "got", as: Bool.self))
            }
        }
    }

    /// A statement of `body` that fails ends the transaction on the server; a `body` that
    /// goes on anyway gets an error, and its closing statements never run on their own.
    @Test func bodyStatementFailureRollsEverythingBackEvenIfCaught() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { try $0.execute(unsafeSQL: "CREATE TABLE ledger (n int PRIMARY KEY)") }
            let error = postgresError {
                try pool.withConnection { connection in
                    try connection.pipelinedTransaction(opening: ["INSERT INTO ledger VALUES (\(Int32(1)))"]) {
                        connection, _ in
                        #expect(throws: PostgresError.self) {
                            try connection.execute("INSERT INTO ledger VALUES (\(Int32(1)))")
                        }
                        // Nothing more runs on its own (it would commit outside the transaction and its lock).
                        #expect(throws: PostgresError.self) {
                            try connection.execute("INSERT INTO ledger VALUES (\(Int32(9)))")
                        }
                        #expect(throws: PostgresError.self) {
                            try connection.pipeline(["INSERT INTO ledger VALUES (\(Int32(10)))"])
                        }
                        return (value: (), closing: ["INSERT INTO ledger VALUES (\(Int32(3)))"])
                    }
                }
            }
            #expect(error?.message.contains("rolled back") == true)
            try pool.withConnection { connection in
                #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self) == 0)
                // The connection is usable again, in and out of pipelined transactions.
                var opening = PostgresPipeline()
                let counted = opening.append(Count(table: "ledger"))
                let n = try connection.pipelinedTransaction(opening: opening) { _, results in
                    (
                        value: try results[counted],
                        closing: ["INSERT INTO ledger VALUES (\(Int32(4)))"]
                    )
                }
                #expect(n == 0)
                #expect(try connection.query("SELECT n FROM ledger").map { try $0.decode("n", as: Int32.self) } == [4])
            }
            #expect(pool.statistics.idle == 1)
        }
    }

    /// A pipeline or another transaction inside the body would commit the open one at its
    /// sync point: refused, and the body's error rolls everything back.
    @Test func pipelinesInsideTheBodyAreRefused() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { try $0.execute(unsafeSQL: "CREATE TABLE ledger (n int)") }
            try pool.withConnection { connection throws in
                #expect(throws: PostgresError.self) {
                    try connection.pipelinedTransaction(opening: ["INSERT INTO ledger VALUES (\(Int32(1)))"]) {
                        connection, _ in
                        try connection.pipeline(["INSERT INTO ledger VALUES (\(Int32(2)))"])
                        return (value: (), closing: [])
                    }
                }
                #expect(throws: PostgresError.self) {
                    try connection.pipelinedTransaction(opening: ["INSERT INTO ledger VALUES (\(Int32(1)))"]) {
                        connection, _ in
                        try connection.pipelinedTransaction(opening: ["INSERT INTO ledger VALUES (\(Int32(2)))"]) {
                            _, _ in (value: (), closing: [])
                        }
                        return (value: (), closing: [])
                    }
                }
                #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self) == 0)
                // Nor inside an explicit transaction, whose work a failing body's ROLLBACK would end.
                try connection.transaction { connection in
                    try connection.execute("INSERT INTO ledger VALUES (\(Int32(3)))")
                    #expect(throws: PostgresError.self) {
                        try connection.pipelinedTransaction(opening: ["INSERT INTO ledger VALUES (\(Int32(4)))"]) {
                            _, _ -> (value: Void, closing: [PostgresQuery]) in
                            throw PostgresError(code: .other, message: "the body fails")
                        }
                    }
                }
                #expect(
                    try connection.query("SELECT string_agg(n::text, ',') AS n FROM ledger")[0].decode(
                        "n", as: String?.self) == "3")
                try connection.execute("DELETE FROM ledger")
                // Sessions run READ COMMITTED whatever the server's default (the implicit transaction takes it).
                #expect(
                    try connection.query("SHOW default_transaction_isolation")[0].decode(
                        "default_transaction_isolation", as: String.self) == "read committed")
            }
            #expect(pool.statistics.idle == 1)
        }
    }

    /// A failing opening statement: its error, nothing committed, the connection reusable;
    /// closing statements first sent unnamed are prepared afterwards and keep working.
    @Test func failedOpeningAndRepeatedClosingStatements() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { try $0.execute(unsafeSQL: "CREATE TABLE ledger (n int PRIMARY KEY)") }
            let error = postgresError {
                try pool.withConnection { connection in
                    try connection.pipelinedTransaction(opening: [
                        "INSERT INTO ledger VALUES (\(Int32(1)))", "SELECT 1 / \(Int32(0)) AS boom",
                    ]) { _, _ in
                        (value: (), closing: ["INSERT INTO ledger VALUES (\(Int32(2)))"])
                    }
                }
            }
            #expect(error?.sqlState == "22012")
            // A failure in the first of several opening statements: the rest are skipped, not waited for.
            let first = postgresError {
                try pool.withConnection { connection in
                    try connection.pipelinedTransaction(
                        opening: [
                            "SELECT 1 / \(Int32(0)) AS boom", "INSERT INTO ledger VALUES (\(Int32(5)))",
                            "SELECT \(Int32(1)) AS one",
                        ]
                    ) { _, _ in (value: (), closing: ["INSERT INTO ledger VALUES (\(Int32(6)))"]) }
                }
            }
            #expect(first?.sqlState == "22012")
            try pool.withConnection { connection in
                #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self) == 0)
                for n in Int32(10)..<Int32(14) {
                    try connection.pipelinedTransaction(opening: ["SELECT \(n) AS n"]) { _, _ in
                        (
                            value: (),
                            closing: ["INSERT INTO ledger VALUES (\(n))", "INSERT INTO ledger VALUES (\(n + 100))"]
                        )
                    }
                }
                #expect(try connection.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self) == 8)
                #expect(
                    try connection.query(
                        "SELECT count(*) AS n FROM pg_prepared_statements WHERE statement LIKE 'INSERT INTO ledger%'")[
                            0
                        ].decode("n", as: Int.self) == 1)
            }
            #expect(pool.statistics.idle == 1)
        }
    }

    /// The transaction that PostgreSQL picks to break a deadlock runs again and commits: the
    /// pipelined path retries as the pool's `transaction` does. This one waits 100 ms before
    /// checking for a deadlock, the other 60 s (long past a sanitizer's slowdown), so this one is
    /// the victim. The closing statement is sent only once the other is seen waiting for its
    /// lock (`pg_stat_activity`, from a third connection): sent earlier, this one could wait past
    /// its 100 ms before the other blocked, and the other would be the one PostgreSQL picks.
    @Test func deadlockVictimIsRetriedAndCommits() throws {
        try withTestPool(size: 3) { pool in
            try pool.withConnection { connection in
                try connection.execute(
                    unsafeSQL: "CREATE TABLE pair (id int PRIMARY KEY, n int); INSERT INTO pair VALUES (1, 0), (2, 0)")
            }
            let runs = Lock(0)
            let otherDone = DispatchSemaphore(value: 0)
            let otherError = Lock<(any Error)?>(nil)
            try pool.withConnection { victim in
                try victim.execute(unsafeSQL: "SET deadlock_timeout = '100ms'")
                try pool.withConnection { other in
                    try other.execute(unsafeSQL: "SET deadlock_timeout = '60s'")
                    try other.execute(unsafeSQL: "BEGIN; UPDATE pair SET n = n + 1 WHERE id = 2")
                    let opening: PostgresPipeline = ["UPDATE pair SET n = n + 10 WHERE id = 1"]
                    let value = try victim.pipelinedTransaction(opening: opening) { _, _ in
                        let run = runs.withLock { count -> Int in
                            count += 1
                            return count
                        }
                        if run == 1 {
                            // The other now waits for row 1 (held here) while holding row 2, which
                            // the closing statement asks for: a deadlock.
                            // Used by that thread alone until otherDone is signalled.
                            nonisolated(unsafe) let blocked = other
                            DispatchQueue.global().async {
                                do {
                                    try blocked.execute(unsafeSQL: "UPDATE pair SET n = n + 1 WHERE id = 1; COMMIT")
                                } catch {
                                    otherError.withLock { $0 = error }
                                }
                                otherDone.signal()
                            }
                            let deadline = ContinuousClock.now + .seconds(30)
                            while ContinuousClock.now < deadline {
                                let waiting = try pool.withConnection { watcher in
                                    try watcher.query(
                                        """
                                        SELECT count(*) AS waiting FROM pg_stat_activity
                                        WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE pair SET n = n + 1 WHERE id = 1%'
                                        """
                                    ).first?.decode("waiting", as: Int64.self) ?? 0
                                }
                                if waiting > 0 { break }
                                Thread.sleep(forTimeInterval: 0.01)
                            }
                        }
                        return (value: run, closing: ["UPDATE pair SET n = n + 10 WHERE id = 2"])
                    }
                    otherDone.wait()
                    #expect(value == 2)
                }
            }
            #expect(otherError.withLock { $0 } == nil)
            let rows = try pool.withConnection { connection in
                try connection.query("SELECT id, n FROM pair ORDER BY id").map { try $0.decode("n", as: Int32.self) }
            }
            #expect(rows == [11, 11])
        }
    }
}
