import Foundation
import IssuerdPostgres
import IssuerdTestSupport
import Testing

/// Uses a private server: stopping the shared one would break tests running in parallel.
@Suite struct PoolRecoveryTests {
    @Test func poolRecoversAfterTheServerStopsAndStartsWithoutBeingRebuilt() throws {
        let server = try DisposablePostgresServer()
        defer { server.destroy() }
        let pool = PostgresPool(
            configuration: PostgresPoolConfiguration(
                connectionString: server.connectionString, size: 2, acquireTimeout: .seconds(5)),
            logger: .silent)
        defer { pool.close() }

        // Two warm idle connections that the outage will kill.
        try pool.withConnection { first in
            try pool.withConnection { second in
                _ = try first.query("SELECT 1")
                _ = try second.query("SELECT 1")
            }
        }
        #expect(pool.statistics.idle == 2)

        try server.stop()
        for _ in 0..<4 {
            let error = postgresError { try pool.ping() }
            #expect(error?.code == .unavailable, "while the server is down: \(String(describing: error))")
        }
        #expect(pool.statistics.inUse == 0)

        try server.start()
        try pool.ping()
        let answer = try pool.withConnection { try $0.query("SELECT 6 * 7 AS n")[0].decode("n", as: Int.self) }
        #expect(answer == 42)
    }

    @Test func transactionInFlightWhenTheServerStopsFailsAsUnavailable() throws {
        let server = try DisposablePostgresServer()
        defer { server.destroy() }
        let pool = PostgresPool(
            configuration: PostgresPoolConfiguration(connectionString: server.connectionString, size: 1),
            logger: .silent)
        defer { pool.close() }
        let error = postgresError {
            try pool.transaction { connection in
                _ = try connection.query("SELECT 1")
                try server.stop()
                _ = try connection.query("SELECT 2")
            }
        }
        #expect(error?.code == .unavailable)
        try server.start()
        try pool.ping()
    }
}
