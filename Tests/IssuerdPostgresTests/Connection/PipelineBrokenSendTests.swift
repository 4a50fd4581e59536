import CPostgres
import Foundation
import Testing

@testable import IssuerdPostgres

/// A pipelined transaction whose closing half cannot be sent (the socket's write side shut
/// under libpq): the error is thrown, nothing is committed, and the pool does not hand the
/// session out again (it is left without a sync point, in an unknown state).
@Suite struct PipelineBrokenSendTests {
    @Test func aSessionLeftWithoutASyncIsNotReused() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { try $0.execute(unsafeSQL: "CREATE TABLE ledger (n int)") }
            let before = try pool.withConnection {
                try $0.query("SELECT pg_backend_pid() AS pid")[0].decode("pid", as: Int32.self)
            }
            try pool.withConnection { connection in
                #expect(throws: PostgresError.self) {
                    try connection.pipelinedTransaction(opening: ["INSERT INTO ledger VALUES (\(Int32(1)))"]) {
                        connection, _ in
                        _ = shutdown(PQsocket(connection.handle), Int32(SHUT_WR))
                        return (value: (), closing: ["INSERT INTO ledger VALUES (\(Int32(2)))"])
                    }
                }
            }
            let after = try pool.withConnection {
                try $0.query("SELECT pg_backend_pid() AS pid")[0].decode("pid", as: Int32.self)
            }
            #expect(after != before, "a new session, not the one left mid-transaction")
            #expect(
                try pool.withConnection {
                    try $0.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self)
                } == 0)
        }
    }
}
