import Foundation
import IssuerdPostgres
import IssuerdTestSupport
import Testing

/// The TCP settings that let a network partition answer within seconds (scripts/reliability's
/// partition scenario measures the behaviour; this holds what reaches libpq).
@Suite struct DeadPeerTimeoutTests {
    @Test func aDeadPeerTimeoutSetsFastKeepalivesAndTheTCPUserTimeout() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = PostgresPool(configuration: PostgresPoolConfiguration(
            connectionString: database.connectionString, size: 1, deadPeerTimeout: .milliseconds(3_500)), logger: .silent)
        defer { pool.close() }
        try pool.withConnection { connection in
            #expect(connection.connectionOption("tcp_user_timeout") == "3500")
            #expect(connection.connectionOption("keepalives_idle") == "1")
            #expect(connection.connectionOption("keepalives_interval") == "1")
            let one = try connection.query("SELECT 1 AS one").first?.decode("one", as: Int32.self)
            #expect(one == 1)
        }
    }

    @Test func withoutOneLibpqKeepsTheSlowerKeepalives() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let connection = try PostgresConnection(connectionString: database.connectionString)
        #expect(connection.connectionOption("keepalives_idle") == "10")
        #expect(connection.connectionOption("tcp_user_timeout").map { $0.isEmpty || $0 == "0" } ?? true)
    }

    @Test func theConnectionStringsOwnValuesWin() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let own = try PostgresConnectionString(database.connectionString).setting("tcp_user_timeout", to: "9000").setting("keepalives_idle", to: "7")
        let connection = try PostgresConnection(connectionString: own.unsafeConnectionString, deadPeerTimeout: .seconds(3))
        #expect(connection.connectionOption("tcp_user_timeout") == "9000")
        #expect(connection.connectionOption("keepalives_idle") == "7")
        #expect(connection.connectionOption("keepalives_interval") == "1")
    }

    @Test func thePasswordIsNeverReadBack() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let connection = try PostgresConnection(connectionString: database.connectionString)
        #expect(connection.connectionOption("password") == nil)
    }
}
