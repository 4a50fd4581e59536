import Foundation
import IssuerdCore
import IssuerdPostgres
import Testing

@Suite struct TransactionTests {
    struct Abort: Error, Equatable {}

    @Test func thrownErrorRollsBackAndIsRethrown() throws {
        try withTestPool { pool in
            try pool.withConnection { try $0.execute(unsafeSQL: "CREATE TABLE ledger (n int)") }
            #expect(throws: Abort.self) {
                try pool.transaction { connection in
                    try connection.execute("INSERT INTO ledger VALUES (\(Int32(1)))")
                    throw Abort()
                }
            }
            let committed = try pool.transaction { connection in
                try connection.execute("INSERT INTO ledger VALUES (\(Int32(2)))")
            }
            #expect(committed == 1)
            let values = try pool.withConnection {
                try $0.query("SELECT n FROM ledger").map { try $0.decode("n", as: Int32.self) }
            }
            #expect(values == [2])
        }
    }

    @Test func swallowedStatementErrorDoesNotPassForACommit() throws {
        try withTestPool { pool in
            try pool.withConnection { try $0.execute(unsafeSQL: "CREATE TABLE ledger (n int PRIMARY KEY)") }
            let error = postgresError {
                try pool.transaction { connection in
                    try connection.execute("INSERT INTO ledger VALUES (\(Int32(1)))")
                    _ = try? connection.execute("INSERT INTO ledger VALUES (\(Int32(1)))")
                }
            }
            #expect(error?.message.contains("rolled back") == true)
            let count = try pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self)
            }
            #expect(count == 0)
        }
    }

    @Test func transactionLeftOpenByABorrowerIsRolledBackOnReturn() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE ledger (n int)")
                try connection.execute(unsafeSQL: "BEGIN; INSERT INTO ledger VALUES (1)")
            }
            let count = try pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self)
            }
            #expect(count == 0)
            #expect(pool.statistics.idle == 1)
        }
    }

    /// Write skew between two SERIALIZABLE transactions: the first flips white rows to
    /// black, a second (committed in between, on another connection) flips black to white.
    /// PostgreSQL's SSI must abort the first at COMMIT with 40001; the pool retries it.
    @Test func serializationFailureIsRetried() throws {
        try withTestPool(size: 2) { pool in
            try pool.withConnection { connection in
                try connection.execute(
                    unsafeSQL:
                        "CREATE TABLE dots (id int PRIMARY KEY, colour text NOT NULL); INSERT INTO dots VALUES (1, 'white'), (2, 'black')"
                )
            }
            let attempts = Lock(0)
            let flipped = try pool.transaction(isolation: .serializable) { connection in
                let attempt = attempts.withLock { count in
                    count += 1
                    return count
                }
                let changed = try connection.execute("UPDATE dots SET colour = 'black' WHERE colour = 'white'")
                if attempt == 1 {
                    // A second SERIALIZABLE transaction, on its own pooled connection.
                    try pool.transaction(isolation: .serializable, maxAttempts: 1) { other in
                        try other.execute("UPDATE dots SET colour = 'white' WHERE colour = 'black'")
                    }
                }
                return changed
            }
            #expect(attempts.withLock { $0 } == 2)
            #expect(flipped == 2)
            let colours = try pool.withConnection {
                try $0.query("SELECT DISTINCT colour FROM dots").map { try $0.decode("colour", as: String.self) }
            }
            #expect(colours == ["black"])
        }
    }

    @Test func serializationFailureSurfacesWhenAttemptsRunOut() throws {
        try withTestPool(size: 2) { pool in
            try pool.withConnection { connection in
                try connection.execute(
                    unsafeSQL: "CREATE TABLE counter (id int PRIMARY KEY, n int); INSERT INTO counter VALUES (1, 0)")
            }
            let error = postgresError {
                try pool.transaction(isolation: .repeatableRead, maxAttempts: 1) { connection in
                    _ = try connection.query("SELECT n FROM counter WHERE id = 1")  // takes the snapshot
                    try pool.withConnection { try $0.execute("UPDATE counter SET n = n + 1 WHERE id = 1") }
                    try connection.execute("UPDATE counter SET n = n + 10 WHERE id = 1")
                }
            }
            #expect(error?.code == .serializationFailure)
            #expect(error?.isTransient == true)
            let n = try pool.withConnection { try $0.query("SELECT n FROM counter")[0].decode("n", as: Int32.self) }
            #expect(n == 1)
        }
    }
}
