import IssuerdPostgres
import Testing

@Suite struct PostgresErrorTests {
    static let schema = """
        CREATE TABLE issuers (id int8 PRIMARY KEY);
        CREATE TABLE cards (
            id int8 PRIMARY KEY,
            pan text NOT NULL CONSTRAINT cards_pan_key UNIQUE,
            issuer_id int8 CONSTRAINT cards_issuer_fk REFERENCES issuers (id),
            tries int4 NOT NULL DEFAULT 0 CONSTRAINT cards_tries_check CHECK (tries >= 0)
        );
        INSERT INTO issuers VALUES (1);
        """

    @Test func uniqueViolationNamesTheConstraintButNotTheValue() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: Self.schema)
                let pan = "4111111111111111"
                try connection.execute("INSERT INTO cards (id, pan) VALUES (\(1), \(pan))")
                let error = postgresError {
                    try connection.execute("INSERT INTO cards (id, pan) VALUES (\(2), \(pan))")
                }
                #expect(error?.code == .uniqueViolation)
                #expect(error?.sqlState == "23505")
                #expect(error?.constraint == "cards_pan_key")
                // The server's DETAIL quotes the key; it is kept apart and out of the description.
                #expect(error?.detail?.contains(pan) == true)
                #expect(error.map { "\($0)" }?.contains(pan) == false)
                #expect(error.map { "\($0)" }?.contains("cards_pan_key") == true)
            }
        }
    }

    @Test(arguments: [
        (
            "INSERT INTO cards (id, pan, issuer_id) VALUES (1, 'x', 99)", PostgresError.Code.foreignKeyViolation,
            "cards_issuer_fk"
        ),
        ("INSERT INTO cards (id, pan, tries) VALUES (1, 'x', -1)", .checkViolation, "cards_tries_check"),
        ("INSERT INTO cards (id, pan) VALUES (1, NULL)", .notNullViolation, ""),
        ("SELEC 1", .syntax, ""),
        ("SELECT * FROM no_such_table", .syntax, ""),
        ("SELECT 1 / 0", .other, ""),
    ])
    func sqlStatesMapToTypedCodes(sql: String, code: PostgresError.Code, constraint: String) throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: Self.schema)
                let error = postgresError { try connection.execute(PostgresQuery(unsafeSQL: sql)) }
                #expect(error?.code == code)
                #expect(error?.sqlState?.count == 5)
                if !constraint.isEmpty { #expect(error?.constraint == constraint) }
                // The connection stays usable after a statement error.
                #expect(try connection.query("SELECT 1::int4 AS one")[0].decode("one", as: Int32.self) == 1)
            }
        }
    }

    @Test func invalidInputMessageMasksTheQuotedValue() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                let pan = "4111111111111111x"
                let error = postgresError { _ = try connection.query("SELECT \(pan)::int8 AS n") }
                #expect(error?.sqlState == "22P02")
                #expect(error?.message.contains(pan) == false)
                #expect(error?.message.contains("****") == true)
            }
        }
    }

    @Test func statementTimeoutIsQueryCanceled() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "SET statement_timeout = 50")
                let error = postgresError { _ = try connection.query("SELECT pg_sleep(5)") }
                #expect(error?.code == .queryCanceled)
                try connection.execute(unsafeSQL: "RESET statement_timeout")
            }
        }
    }

    @Test(arguments: [
        ("23505", "uniqueViolation"), ("40001", "serializationFailure"), ("40P01", "deadlockDetected"),
        ("57P01", "unavailable"), ("08006", "unavailable"), ("42703", "syntax"), ("XX000", "other"),
        ("53100", "insufficientResources"), ("53200", "insufficientResources"), ("53400", "insufficientResources"),
        ("53300", "unavailable"),
    ])
    func codeMapping(sqlState: String, name: String) {
        #expect(PostgresError.code(forSQLState: sqlState).name == name)
    }
}
