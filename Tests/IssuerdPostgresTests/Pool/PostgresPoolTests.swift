import Foundation
import IssuerdCore
import Testing

@testable import IssuerdPostgres

@Suite struct PostgresPoolTests {
    @Test func exhaustedPoolTimesOutCleanlyAndKeepsWorking() throws {
        try withTestPool(size: 1, acquireTimeout: .milliseconds(200)) { pool in
            let error = postgresError {
                try pool.withConnection { _ in
                    #expect(pool.statistics.inUse == 1)
                    try pool.withConnection { _ in Issue.record("a second connection was lent from a pool of one") }
                }
            }
            #expect(error?.code == .poolTimeout)
            #expect(pool.statistics.inUse == 0)
            #expect(pool.statistics.idle == 1)
            try pool.ping()
        }
    }

    @Test func waiterGetsTheConnectionWhenItIsReturned() throws {
        try withTestPool(size: 1, acquireTimeout: .seconds(30)) { pool in
            let holderPID = Lock<Int32>(0)
            let waiterPID = Lock<Int32>(0)
            let waiterError = Lock<String?>(nil)
            try pool.withConnection { connection in
                holderPID.withLock { $0 = connection.backendProcessID }
                onThreadsDetached {
                    do {
                        try pool.withConnection { other in waiterPID.withLock { $0 = other.backendProcessID } }
                    } catch {
                        waiterError.withLock { $0 = "\(error)" }
                    }
                }
                // Return the connection only once the other thread is provably blocked waiting.
                while pool.waitingCount == 0 { Thread.sleep(forTimeInterval: 0.005) }
            }
            while waiterPID.withLock({ $0 }) == 0 && waiterError.withLock({ $0 }) == nil {
                Thread.sleep(forTimeInterval: 0.005)
            }
            #expect(waiterError.withLock { $0 } == nil)
            #expect(waiterPID.withLock { $0 } == holderPID.withLock { $0 })
        }
    }

    @Test func manyThreadsShareASmallPoolWithoutExceedingIt() throws {
        try withTestPool(size: 3) { pool in
            try pool.withConnection { try $0.execute(unsafeSQL: "CREATE TABLE hits (thread int, n int)") }
            let failures = Lock(0)
            let peak = Lock(0)
            onThreads(8) { thread in
                for n in 0..<15 {
                    do {
                        try pool.withConnection { connection in
                            peak.withLock { $0 = max($0, pool.statistics.inUse) }
                            try connection.execute("INSERT INTO hits VALUES (\(Int32(thread)), \(Int32(n)))")
                        }
                    } catch {
                        failures.withLock { $0 += 1 }
                    }
                }
            }
            #expect(failures.withLock { $0 } == 0)
            #expect(peak.withLock { $0 } <= 3)
            let count = try pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM hits")[0].decode("n", as: Int.self)
            }
            #expect(count == 8 * 15)
            #expect(pool.statistics.inUse == 0)
            #expect(pool.statistics.idle <= 3)
        }
    }

    @Test func connectionKilledByTheServerIsDiscardedAndReplaced() throws {
        try withTestPool(size: 1) { pool in
            let victim = try pool.withConnection { $0.backendProcessID }
            // Terminate the pooled session from outside the pool, as a failover would.
            let admin = try PostgresConnection(connectionString: pool.configuration.connectionString)
            try admin.execute("SELECT pg_terminate_backend(\(victim))")
            // Wait until the server has actually ended the session.
            while try admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = \(victim)").count > 0 {
                Thread.sleep(forTimeInterval: 0.01)
            }
            let replacement = try pool.withConnection { $0.backendProcessID }
            #expect(replacement != victim)
            #expect(pool.statistics.idle == 1)
        }
    }

    @Test func connectionThatDiesMidUseReportsUnavailableAndIsDiscarded() throws {
        try withTestPool(size: 1) { pool in
            let error = postgresError {
                try pool.withConnection { connection in
                    // The session ends itself; the statement's result is a lost connection.
                    _ = try connection.query("SELECT pg_terminate_backend(pg_backend_pid())")
                }
            }
            #expect(error?.code == .unavailable)
            #expect(pool.statistics.idle == 0)
            try pool.ping()
        }
    }

    @Test func closedPoolRefusesBorrowers() throws {
        try withTestPool { pool in
            try pool.ping()
            pool.close()
            #expect(pool.statistics.idle == 0)
            #expect(postgresError { try pool.ping() }?.code == .unavailable)
        }
    }

    @Test func unreachableServerFailsFastWithUnavailable() {
        let pool = PostgresPool(
            configuration: PostgresPoolConfiguration(
                connectionString: "host=/nonexistent-socket-dir port=1 user=nobody dbname=nothing", size: 1),
            logger: .silent)
        let error = postgresError { try pool.ping() }
        #expect(error?.code == .unavailable)
        #expect(pool.statistics.inUse == 0)
    }
}

/// Starts `body` on its own thread and returns at once.
func onThreadsDetached(_ body: @escaping @Sendable () -> Void) {
    Thread { body() }.start()
}
