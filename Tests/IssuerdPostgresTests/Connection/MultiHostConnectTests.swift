import IssuerdPostgres
import Testing

/// A connection string naming several hosts is connected with libpq's blocking connect, which
/// moves on from a host that does not answer after `connect_timeout` (its non-blocking connect
/// never does): the shape is read as libpq reads it.
@Suite("Several hosts in a connection string")
struct MultiHostConnectTests {
    @Test(
        "Several hosts are recognised in conninfo and URI forms; one host, a socket folder or a bad string is not",
        arguments: [
            ("host=db1,db2 port=5432,5432 dbname=issuerd target_session_attrs=read-write", true),
            ("postgresql://db1:5432,db2:5432/issuerd?target_session_attrs=read-write", true),
            ("postgresql:///issuerd?host=/run/a,/run/b", true),
            ("host=db1 dbname=issuerd", false),
            ("postgresql://issuerd@localhost/issuerd", false),
            ("host=/var/run/postgresql dbname=issuerd", false),
            ("host='unterminated", false),
        ])
    func severalHosts(connectionString: String, expected: Bool) {
        #expect(PostgresConnection.listsSeveralHosts(connectionString) == expected)
    }
}
