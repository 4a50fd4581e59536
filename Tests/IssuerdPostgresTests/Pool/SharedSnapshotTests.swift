import Foundation
import IssuerdPostgres
import IssuerdTestSupport
import Testing

/// ``PostgresPool/withSharedSnapshot(of:extra:_:)``: the extra connections see exactly what the
/// first one sees, and a caller never waits for them.
@Suite struct SharedSnapshotTests {
    static func count(_ connection: PostgresConnection) throws -> Int {
        let row = try #require(try connection.query("SELECT count(*)::int AS n FROM shared_snapshot_rows").first)
        return Int(try row.decode("n", as: Int32.self))
    }

    @Test func extraConnectionsSeeTheFirstOnesSnapshotNotLaterCommits() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 4)  // the first, two spares, one left free
        defer { pool.close() }
        let writer = try PostgresConnection(connectionString: database.connectionString)
        try writer.execute("CREATE TABLE shared_snapshot_rows (n int)")
        try writer.execute("INSERT INTO shared_snapshot_rows SELECT generate_series(1, 5)")
        let seen = try pool.transaction(isolation: .repeatableRead) { connection -> [Int] in
            #expect(try Self.count(connection) == 5)  // takes the snapshot
            // Committed after the snapshot, before the others join it.
            try writer.execute("INSERT INTO shared_snapshot_rows SELECT generate_series(6, 9)")
            return try pool.withSharedSnapshot(of: connection, extra: 2) { connections in
                #expect(connections.count == 3)
                #expect(
                    Set(
                        try connections.map {
                            try $0.query("SELECT pg_backend_pid() AS p").first!.decode("p", as: Int32.self)
                        }
                    ).count == 3)
                return try connections.map(Self.count)
            }
        }
        #expect(seen == [5, 5, 5])
        // Without the shared snapshot, a new transaction sees the later rows.
        let fresh = try pool.transaction(isolation: .repeatableRead) { try Self.count($0) }
        #expect(fresh == 9)
        // The extra connections went back to the pool with no transaction open.
        #expect(pool.statistics.inUse == 0)
        try pool.withConnection { connection in
            let status = try connection.query(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'"
            )
            #expect(try status.first?.decode("n", as: Int32.self) == 0)
        }
    }

    @Test func withNoConnectionFreeTheBodyGetsTheFirstAloneAtOnce() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 1, acquireTimeout: .seconds(30))
        defer { pool.close() }
        let started = Date()
        let count = try pool.transaction(isolation: .repeatableRead) { connection in
            try pool.withSharedSnapshot(of: connection, extra: 1) { $0.count }
        }
        #expect(count == 1)
        #expect(Date().timeIntervalSince(started) < 10, "waited for a connection the pool could not give")
    }

    @Test func aSpareIsTakenOnlyWhileAnotherConnectionStaysFree() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 3)
        defer { pool.close() }
        let counts = try pool.transaction(isolation: .repeatableRead) { connection -> [Int] in
            let alone = try pool.withConnection { _ in  // a request holds one: only the last is free
                try pool.withSharedSnapshot(of: connection, extra: 2) { $0.count }
            }
            let withOne = try pool.withSharedSnapshot(of: connection, extra: 2) { $0.count }  // two free: one lent
            return [alone, withOne]
        }
        #expect(counts == [1, 2])
    }

    @Test func readCommittedGetsTheFirstConnectionAlone() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 4)
        defer { pool.close() }
        let count = try pool.transaction(isolation: .readCommitted) { connection in
            try pool.withSharedSnapshot(of: connection, extra: 2) { $0.count }
        }
        #expect(count == 1)
    }

    @Test func theSparesGoBackWhenTheBodyThrows() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 4)
        defer { pool.close() }
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try pool.transaction(isolation: .repeatableRead) { connection in
                try pool.withSharedSnapshot(of: connection, extra: 2) { connections in
                    #expect(connections.count == 3)
                    _ = try connections[2].query("DECLARE left_open CURSOR FOR SELECT 1")
                    throw Stop()
                }
            }
        }
        #expect(pool.statistics.inUse == 0)
        try pool.withConnection { connection in
            let open = try connection.query(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'"
            )
            #expect(try open.first?.decode("n", as: Int32.self) == 0)
        }
    }

    @Test func extraConnectionsAreReadOnly() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 3)
        defer { pool.close() }
        try pool.withConnection { try $0.execute("CREATE TABLE shared_snapshot_rows (n int)") }
        try pool.transaction(isolation: .repeatableRead) { connection in
            try pool.withSharedSnapshot(of: connection, extra: 1) { connections in
                #expect(connections.count == 2)
                #expect(throws: PostgresError.self) {
                    try connections[1].execute("INSERT INTO shared_snapshot_rows VALUES (1)")
                }
            }
        }
    }
}
