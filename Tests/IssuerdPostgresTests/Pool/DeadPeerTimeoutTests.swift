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
        let pool = PostgresPool(
            configuration: PostgresPoolConfiguration(
                connectionString: database.connectionString, size: 1, deadPeerTimeout: .milliseconds(3_500)),
            logger: .silent)
        defer { pool.close() }
        try pool.withConnection { connection in
            #expect(connection.connectionOption("tcp_user_timeout") == "3500")
            #expect(connection.connectionOption("keepalives_idle") == "1")
            #expect(connection.connectionOption("keepalives_interval") == "1")
            let one = try connection.query("SELECT 1 AS one").first?.decode("one", as: Int32.self)
            #expect(one == 1)
        }
    }

    @Test func aDeadPeerTimeoutAlsoSetsTheServersKeepalivesForTheSession() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        func sources(_ connection: PostgresConnection) throws -> [String] {
            try connection.query(
                """
                SELECT name || '=' || source AS s FROM pg_settings
                WHERE name IN ('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', 'tcp_user_timeout') ORDER BY name
                """
            ).map { try $0.decode("s", as: String.self) }
        }
        // Over the tests' Unix socket the values read 0; that the session set them shows in `source`.
        let serving = try PostgresConnection(connectionString: database.connectionString, deadPeerTimeout: .seconds(3))
        #expect(
            try sources(serving) == [
                "tcp_keepalives_count=session", "tcp_keepalives_idle=session", "tcp_keepalives_interval=session",
                "tcp_user_timeout=session",
            ])
        let command = try PostgresConnection(connectionString: database.connectionString)
        #expect(try sources(command).allSatisfy { !$0.hasSuffix("=session") })
    }

    @Test(
        "Over TCP the session's server-side values are the ones promised: keepalives 1/1/3 s, tcp_user_timeout the dead-peer timeout (at least 10 s)"
    )
    func theServersValuesOverTCP() throws {
        let server = try DisposablePostgresServer(loopbackTCP: true)
        defer { server.destroy() }
        let tcp = try #require(server.tcpConnectionString)
        func values(_ connection: PostgresConnection) throws -> [String] {
            try connection.query(
                """
                SELECT name || '=' || setting AS s FROM pg_settings
                WHERE name IN ('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', 'tcp_user_timeout') ORDER BY name
                """
            ).map { try $0.decode("s", as: String.self) }
        }
        let serving = try PostgresConnection(connectionString: tcp, deadPeerTimeout: .seconds(3))
        #expect(
            try values(serving) == [
                "tcp_keepalives_count=3", "tcp_keepalives_idle=1", "tcp_keepalives_interval=1",
                "tcp_user_timeout=10000",
            ])
        let longer = try PostgresConnection(connectionString: tcp, deadPeerTimeout: .seconds(25))
        #expect(try values(longer).last == "tcp_user_timeout=25000")
        // A command's session keeps the server's defaults: the kernel's keepalives, no user timeout.
        let command = try PostgresConnection(connectionString: tcp)
        let defaults = try values(command)
        #expect(defaults.last == "tcp_user_timeout=0")
        #expect(!defaults.contains("tcp_keepalives_idle=1"))
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
        let own = try PostgresConnectionString(database.connectionString).setting("tcp_user_timeout", to: "9000")
            .setting("keepalives_idle", to: "7")
        let connection = try PostgresConnection(
            connectionString: own.unsafeConnectionString, deadPeerTimeout: .seconds(3))
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
